//! `date:` and `updated:` values: calendar dates with an optional time that HTML's `datetime`
//! attribute and Atom's RFC 3339 dates both accept.

/// Checks a `date:`/`updated:` value: a real calendar date `YYYY-MM-DD`, optionally followed by
/// `T` or a space and a time `HH:MM[:SS[.fraction]]` with an optional `Z` or `±HH:MM` offset.
/// The error says what is wrong.
pub(crate) fn check_date(s: &str) -> Result<(), String> {
    let b = s.as_bytes();
    let shape = b.len() >= 10
        && b[..10].iter().enumerate().all(|(i, c)| {
            if i == 4 || i == 7 {
                *c == b'-'
            } else {
                c.is_ascii_digit()
            }
        });
    if !shape {
        return Err("it is not written YYYY-MM-DD".into());
    }
    let num = |r: std::ops::Range<usize>| s[r].parse::<u32>().unwrap_or(0);
    let (year, month, day) = (num(0..4), num(5..7), num(8..10));
    if !(1..=12).contains(&month) {
        return Err(format!("there is no month {month:02}"));
    }
    let leap = year % 4 == 0 && (year % 100 != 0 || year % 400 == 0);
    let days = match month {
        2 if leap => 29,
        2 => 28,
        4 | 6 | 9 | 11 => 30,
        _ => 31,
    };
    if !(1..=days).contains(&day) {
        return Err(format!("{year:04}-{month:02} has {days} days"));
    }
    match b.get(10) {
        None => Ok(()),
        Some(b'T' | b' ') => check_time(&s[11..]),
        Some(_) => Err("the date must be followed by nothing, or `T`/a space and a time".into()),
    }
}

/// Checks `HH:MM[:SS[.fraction]]` (seconds 00–59) followed by nothing, `Z` or `±HH:MM`.
fn check_time(t: &str) -> Result<(), String> {
    let bad = || {
        Err(format!(
            "the time `{t}` is not HH:MM[:SS] with an optional Z or ±HH:MM"
        ))
    };
    let two = |s: &str, max: u32| -> Option<u32> {
        (s.len() == 2 && s.bytes().all(|c| c.is_ascii_digit()))
            .then(|| s.parse::<u32>().ok())
            .flatten()
            .filter(|v| *v <= max)
    };
    let (clock, zone) = match t.find(['Z', 'z', '+', '-']) {
        Some(i) => (&t[..i], &t[i..]),
        None => (t.trim_end(), ""),
    };
    let clock = clock.trim_end();
    let (hms, frac) = match clock.split_once('.') {
        Some((hms, frac)) => (hms, Some(frac)),
        None => (clock, None),
    };
    let parts: Vec<&str> = hms.split(':').collect();
    if parts.len() == 3 && parts[2] == "60" {
        // RFC 3339 allows a leap second; HTML's `datetime` attribute (seconds 0–59) does not,
        // and the same value feeds both.
        return Err(format!(
            "the time `{t}` has the leap second :60, which HTML's `datetime` attribute cannot hold; write :59"
        ));
    }
    let ok_clock = matches!(parts.len(), 2 | 3)
        && two(parts[0], 23).is_some()
        && two(parts[1], 59).is_some()
        && parts.get(2).is_none_or(|s| two(s, 59).is_some())
        && frac.is_none_or(|f| {
            parts.len() == 3 && !f.is_empty() && f.bytes().all(|c| c.is_ascii_digit())
        });
    let ok_zone = match zone {
        "" | "Z" | "z" => true,
        z => z[1..]
            .split_once(':')
            .is_some_and(|(h, m)| two(h, 23).is_some() && two(m, 59).is_some()),
    };
    if ok_clock && ok_zone {
        Ok(())
    } else {
        bad()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn dates_and_times() {
        assert!(check_date("2026-11-20").is_ok());
        assert!(check_date("2026-11-20T23:59:59Z").is_ok());
        assert!(check_date("2026-11-20 08:00+01:00").is_ok());
        assert!(check_date("2026-02-30").is_err());
        let leap = check_date("2026-12-31T23:59:60Z").unwrap_err();
        assert!(leap.contains("leap second"), "{leap}");
        assert!(check_date("2026-12-31T23:59:61").is_err());
    }
}
