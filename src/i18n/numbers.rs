//! Locale-aware numbers: grouped integers, decimals, byte sizes, short counts and percentages.
//!
//! Digits, decimal and grouping separators come from CLDR through ICU4X's `DecimalFormatter`
//! (Spanish writes "6,14" and "30.130.176", English "6.14" and "30,130,176"). What is chosen here is
//! only the *scale* of a short count, following CLDR's short decimal patterns: thousands-based
//! "K/M/B" in English, "mil/M/mil M" in Spanish, and the 万 (10⁴) / 亿 (10⁸) myriads in Chinese.

use fixed_decimal::{Decimal, FloatPrecision};
use icu_decimal::options::{DecimalFormatterOptions, GroupingStrategy};
use icu_decimal::{DecimalFormatter, DecimalFormatterPreferences};
use icu_locale::Locale;

/// Bytes in a KiB, MiB and GiB (binary prefixes, as PyTorch's allocator messages use).
pub(crate) const KIB: u64 = 1 << 10;
/// Bytes in a MiB.
pub(crate) const MIB: u64 = 1 << 20;
/// Bytes in a GiB.
pub(crate) const GIB: u64 = 1 << 30;

/// No-break space: keeps a number and its unit on one line, in HTML and Markdown alike.
const NBSP: char = '\u{a0}';

/// The language families whose short-count conventions differ.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum NumberStyle {
    /// Thousands-based, no space before the suffix: "29.94M".
    English,
    /// Thousands-based, space before the suffix: "29,94 M", "1,20 mil M".
    Spanish,
    /// Myriad-based: "2994万", "1.245亿".
    Chinese,
}

/// Formats numbers for one locale.
#[derive(Debug)]
pub(crate) struct NumberFormat {
    formatter: DecimalFormatter,
    /// Groups only from five digits on: the mantissa of a short count ("2994万", not "2,994万").
    mantissa: DecimalFormatter,
    family: NumberStyle,
}

impl NumberFormat {
    /// A formatter for a BCP 47 language tag such as `en`, `es` or `zh`.
    pub(crate) fn new(lang: &str) -> Result<Self, String> {
        let locale = Locale::try_from_str(lang)
            .map_err(|e| format!("invalid language tag {lang:?}: {e}"))?;
        let prefs: DecimalFormatterPreferences = (&locale).into();
        let family = match locale.id.language.as_str() {
            "es" => NumberStyle::Spanish,
            "zh" | "ja" => NumberStyle::Chinese,
            _ => NumberStyle::English,
        };
        // Chinese groups by myriads, not thousands: a whole number is written with no separator
        // ("1024", "65536", as the config says it), and a count large enough to need grouping
        // is written with 万/亿 ([`NumberFormat::count`]).
        let mut whole = DecimalFormatterOptions::default();
        if family == NumberStyle::Chinese {
            whole.grouping_strategy = Some(GroupingStrategy::Never);
        }
        let formatter = DecimalFormatter::try_new(prefs, whole)
            .map_err(|e| format!("no number format data for {lang:?}: {e}"))?;
        let mut options = DecimalFormatterOptions::default();
        options.grouping_strategy = Some(GroupingStrategy::Min2);
        let mantissa = DecimalFormatter::try_new(prefs, options)
            .map_err(|e| format!("no number format data for {lang:?}: {e}"))?;
        Ok(NumberFormat {
            formatter,
            mantissa,
            family,
        })
    }

    /// A whole number with the locale's grouping: "30,130,176" / "30.130.176" / "30130176"
    /// (Chinese groups by myriads, which [`NumberFormat::count`] writes as 万/亿).
    pub(crate) fn int(&self, n: u64) -> String {
        self.formatter.format(&Decimal::from(n)).to_string()
    }

    /// A signed whole number with the locale's grouping and minus sign.
    pub(crate) fn signed(&self, n: i64) -> String {
        self.formatter.format(&Decimal::from(n)).to_string()
    }

    /// `x` rounded to exactly `frac` fraction digits: "6.14" / "6,14".
    pub(crate) fn decimal(&self, x: f64, frac: usize) -> String {
        format_rounded(&self.formatter, x, frac)
    }

    /// A byte size in the largest binary unit that gives a number of at least 1: two decimals for
    /// GiB ("6.14 GiB"), whole numbers for MiB and KiB ("768 MiB"), exact bytes below that.
    pub(crate) fn bytes(&self, n: u64) -> String {
        if n >= GIB {
            self.gib(n)
        } else if n >= MIB {
            self.mib(n)
        } else if n >= KIB {
            format!("{}{NBSP}KiB", self.decimal(n as f64 / KIB as f64, 0))
        } else {
            format!("{}{NBSP}B", self.int(n))
        }
    }

    /// A range of byte sizes, the unit written once when both ends share it: "12.10–13.40 GiB",
    /// "300–600 MiB"; otherwise both ends in full ("900 MiB–1.20 GiB").
    pub(crate) fn byte_range(&self, low: u64, high: u64) -> String {
        let (lo, hi) = (self.bytes(low), self.bytes(high));
        match (lo.rsplit_once(NBSP), hi.rsplit_once(NBSP)) {
            (Some((ln, lu)), Some((_, hu))) if lu == hu => format!("{ln}–{hi}"),
            _ => format!("{lo}–{hi}"),
        }
    }

    /// A byte size in GiB with two decimals.
    pub(crate) fn gib(&self, n: u64) -> String {
        format!("{}{NBSP}GiB", self.decimal(n as f64 / GIB as f64, 2))
    }

    /// A byte size in whole MiB.
    pub(crate) fn mib(&self, n: u64) -> String {
        format!("{}{NBSP}MiB", self.decimal(n as f64 / MIB as f64, 0))
    }

    /// A short count, as a native reader of the locale writes parameter counts: "29.94M" (as
    /// nanoGPT prints them), "29,94 M" and "1558 M" (Spanish counts billions in millions),
    /// "2994万"; below a million (a myriad in Chinese) the whole number.
    pub(crate) fn count(&self, n: u64) -> String {
        let x = n as f64;
        match self.family {
            NumberStyle::English | NumberStyle::Spanish => {
                let (value, suffix) = match n {
                    0..=999_999 => return self.int(n),
                    1_000_000..=999_999_999 => (x / 1e6, "M"),
                    _ if self.family == NumberStyle::English => (x / 1e9, "B"),
                    // Spanish counts billions in millions ("1558 M" for 1,557,611,200: mil millones): "1,56 mil
                    // M" reads as a typo. Four significant digits, as below a billion.
                    _ => {
                        let millions = format_rounded(&self.mantissa, x / 1e6, 0);
                        return format!("{millions}{NBSP}M");
                    }
                };
                let sep = if self.family == NumberStyle::Spanish {
                    NBSP.to_string()
                } else {
                    String::new()
                };
                format!("{}{sep}{suffix}", format_rounded(&self.mantissa, value, 2))
            }
            NumberStyle::Chinese => {
                let (value, suffix) = match n {
                    0..=9_999 => return self.int(n),
                    10_000..=99_999_999 => (x / 1e4, "万"),
                    _ => (x / 1e8, "亿"),
                };
                // Four significant digits: 2994万, 124.5万, 1.245亿.
                let int_digits = (value.max(1.0).log10().floor() as usize) + 1;
                let frac = 4usize.saturating_sub(int_digits);
                format!("{}{suffix}", format_rounded(&self.mantissa, value, frac))
            }
        }
    }

    /// A ratio as a percentage: "63%" in English and Chinese, "63 %" in Spanish (CLDR's percent
    /// patterns); one decimal below 10 %.
    pub(crate) fn percent(&self, ratio: f64) -> String {
        let pct = ratio * 100.0;
        let digits = if pct.abs() < 10.0 && pct != 0.0 { 1 } else { 0 };
        let num = self.decimal(pct, digits);
        match self.family {
            NumberStyle::Spanish => format!("{num}{NBSP}%"),
            _ => format!("{num}%"),
        }
    }
}

/// `x` rounded half-away-from-zero to `frac` fraction digits, padded with zeros, then formatted.
fn format_rounded(formatter: &DecimalFormatter, x: f64, frac: usize) -> String {
    let frac = frac.min(12) as i16;
    match Decimal::try_from_f64(x, FloatPrecision::RoundTrip) {
        Ok(mut d) => {
            d.round(-frac);
            d.absolute.pad_end(-frac);
            formatter.format(&d).to_string()
        }
        Err(_) => x.to_string(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn spanish_uses_decimal_comma_and_dot_grouping() {
        let es = NumberFormat::new("es").unwrap();
        assert_eq!(es.decimal(6.1406, 2), "6,14");
        assert_eq!(es.int(30_130_176), "30.130.176");
        assert_eq!(es.gib(6_593_445_888), "6,14\u{a0}GiB");
        assert_eq!(es.count(29_938_560), "29,94\u{a0}M");
        // Billions in millions, never "1,56 mil M".
        assert_eq!(es.count(1_557_611_200), "1558\u{a0}M");
        assert_eq!(es.percent(0.634), "63\u{a0}%");
    }

    #[test]
    fn english_and_chinese_formats() {
        let en = NumberFormat::new("en").unwrap();
        assert_eq!(en.int(30_130_176), "30,130,176");
        assert_eq!(en.count(29_938_560), "29.94M");
        assert_eq!(en.bytes(6_593_445_888), "6.14\u{a0}GiB");
        assert_eq!(en.bytes(805_306_368), "768\u{a0}MiB");
        assert_eq!(en.bytes(512), "512\u{a0}B");
        let zh = NumberFormat::new("zh").unwrap();
        assert_eq!(zh.count(29_938_560), "2994万");
        assert_eq!(zh.count(124_475_904), "1.245亿");
        assert_eq!(zh.count(4_992), "4992");
        // Whole numbers are never grouped by thousands (config values read as the config says).
        assert_eq!(zh.int(65_536), "65536");
        assert_eq!(zh.int(2_457_600), "2457600");
        assert_eq!(zh.count(2_457_600), "245.8万");
        assert_eq!(zh.count(1_234_567), "123.5万");
        assert_eq!(zh.decimal(6.1406, 2), "6.14");
    }
}
