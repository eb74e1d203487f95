//! The GPU catalog: cards, their usable memory as PyTorch reports it, and bf16 support, looked
//! up by id or alias. Reading a catalog file (and the built-in `data/gpus.yaml`) is
//! [`crate::scenario::catalog`]'s.

use serde::{Deserialize, Serialize};

/// One GPU model.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Gpu {
    /// Stable id used by guides and `--gpu` (e.g. `rtx-4070`).
    pub(crate) id: String,
    /// Display name.
    pub(crate) name: String,
    /// Memory PyTorch can see: `torch.cuda.get_device_properties().total_memory`, in bytes.
    pub capacity_bytes: u64,
    /// The memory size on the box, in GB (informative only).
    #[serde(default)]
    pub(crate) memory_gb_marketing: f64,
    /// Whether the card has bf16 tensor cores (T4 and V100 do not).
    #[serde(default = "yes")]
    pub(crate) bf16: bool,
    /// Other ids that find this card.
    #[serde(default)]
    pub(crate) aliases: Vec<String>,
    /// Where `capacity_bytes` comes from: a printed `total_memory`, an out-of-memory message or
    /// `nvidia-smi`'s total (the built-in catalog names one for every entry).
    #[serde(default)]
    pub(crate) source: String,
    /// The capacity the same card shows under other settings (ECC switched, Windows' display
    /// driver model): `diagnose` recognizes a card from any of them.
    #[serde(default)]
    pub(crate) variants: Vec<CapacityVariant>,
}

/// A setting under which a card shows another capacity than its `capacity_bytes`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum VariantKind {
    /// ECC switched on (data-center and workstation cards reserve part of the memory for it).
    EccOn,
    /// ECC switched off.
    EccOff,
    /// Windows under WDDM: CUDA reports the memory the display driver model lets it see,
    /// usually more than Linux does for the same card.
    Windows,
    /// A newer Linux driver that keeps more of the memory for itself than the one behind the
    /// entry's figure (a T4 prints 14.56-14.58 GiB on driver 535.183 against 14.75-14.76 before).
    NewerDriver,
}

/// One other capacity of a card, with its source.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct CapacityVariant {
    /// The setting.
    pub(crate) when: VariantKind,
    /// What PyTorch reports under it, in bytes.
    pub(crate) capacity_bytes: u64,
    /// Where the figure comes from.
    pub(crate) source: String,
}

fn yes() -> bool {
    true
}

/// How a `source` starts when no thread or file that printed the figure is at hand: the rest
/// says why, and what the figure is derived (or taken) from.
const NOT_SOURCED: &str = "not sourced";

impl VariantKind {
    /// The setting in words, after a card's name ("NVIDIA L4 with ECC off").
    fn words(self) -> &'static str {
        match self {
            VariantKind::EccOn => " with ECC on",
            VariantKind::EccOff => " with ECC off",
            VariantKind::Windows => " under Windows",
            VariantKind::NewerDriver => " on a newer driver",
        }
    }
}

impl Gpu {
    /// The note `estimate` and `diagnose` print when they use a figure of this card that no
    /// printed message backs: what it rests on, and how to give the real one. `figure` is the
    /// variant used, by its setting and capacity (a card can list two figures for one setting,
    /// e.g. two newer drivers), or `None` for `capacity_bytes`. `None` for a sourced figure (and
    /// for a user's own `--catalog` entry, whose source is empty).
    pub(crate) fn unsourced_capacity_note(
        &self,
        figure: Option<(VariantKind, u64)>,
    ) -> Option<String> {
        let setting = figure.map(|(kind, _)| kind);
        let (capacity, source) = match figure {
            None => (self.capacity_bytes, self.source.as_str()),
            Some((kind, bytes)) => self
                .variants
                .iter()
                .find(|v| v.when == kind && v.capacity_bytes == bytes)
                .map(|v| (v.capacity_bytes, v.source.as_str()))?,
        };
        let basis = source.strip_prefix(NOT_SOURCED)?;
        let gib = capacity as f64 / (1u64 << 30) as f64;
        Some(format!(
            "{}{}: its capacity in vramdoc's catalog, {gib:.2} GiB, is not sourced{basis}. If your card prints another figure (the \"total capacity\" of its out-of-memory message, or torch.cuda.get_device_properties(0).total_memory), give it in a --catalog FILE entry with id {} and its capacity_bytes; memory other programs hold goes in --other-processes",
            self.name,
            setting.map_or("", VariantKind::words),
            self.id,
        ))
    }
}

/// A card's name as the catalog spells ids: lower case, words joined by `-`, without the
/// vendor and brand words that `nvidia-smi` and out-of-memory messages print
/// (`NVIDIA GeForce RTX 4090` → `rtx-4090`).
fn spelled_as_id(name: &str) -> String {
    name.to_ascii_lowercase()
        .split(|c: char| c.is_whitespace() || c == '-' || c == '_')
        .filter(|w| !w.is_empty() && !matches!(*w, "nvidia" | "geforce" | "tesla"))
        .collect::<Vec<_>>()
        .join("-")
}

/// A list of GPUs, looked up by id or alias (case-insensitive).
#[derive(Debug, Clone, PartialEq, Default)]
pub struct GpuCatalog {
    gpus: Vec<Gpu>,
}

impl GpuCatalog {
    /// The GPU with this id or alias, ignoring ASCII case; failing that, the card whose id or
    /// alias reads the same once both are [`spelled_as_id`] (`"NVIDIA GeForce RTX 4090"`,
    /// `RTX_4090` and `rtx 4090` find `rtx-4090`).
    pub fn get(&self, id: &str) -> Option<&Gpu> {
        let id = id.trim();
        self.gpus
            .iter()
            .find(|g| g.id.eq_ignore_ascii_case(id))
            .or_else(|| {
                self.gpus
                    .iter()
                    .find(|g| g.aliases.iter().any(|a| a.eq_ignore_ascii_case(id)))
            })
            .or_else(|| {
                let want = spelled_as_id(id);
                self.gpus.iter().find(|g| {
                    std::iter::once(&g.id)
                        .chain(&g.aliases)
                        .any(|n| spelled_as_id(n) == want)
                })
            })
    }

    /// The error for an id no card has: up to three ids it may have meant (those containing its
    /// words, such as `rtx-4090` for `4090` and `rtx-3090-ti` for `3090 Ti`, or within a third
    /// of their length in edits), then every id.
    pub fn unknown_card(&self, id: &str) -> String {
        let want = spelled_as_id(id);
        let mut near: Vec<(usize, &str)> = self
            .gpus
            .iter()
            .filter_map(|g| {
                let have = spelled_as_id(&g.id);
                let d = crate::scenario::model::edit_distance(&want, &have);
                let contains =
                    want.len() >= 3 && format!("-{have}-").contains(&format!("-{want}-"));
                (contains || d <= have.len().max(3) / 3).then_some((d, g.id.as_str()))
            })
            .collect();
        near.sort();
        let near: Vec<&str> = near.into_iter().take(3).map(|(_, id)| id).collect();
        let known: Vec<&str> = self.gpus.iter().map(|g| g.id.as_str()).collect();
        let hint = if near.is_empty() {
            String::new()
        } else {
            format!("did you mean {}? ", near.join(", "))
        };
        format!(
            "unknown GPU \"{id}\"; {hint}known ids: {}",
            known.join(", ")
        )
    }

    /// Adds checked cards; a card whose id exists replaces it.
    pub(crate) fn insert_all(&mut self, gpus: Vec<Gpu>) {
        for gpu in gpus {
            match self.gpus.iter_mut().find(|g| g.id == gpu.id) {
                Some(slot) => *slot = gpu,
                None => self.gpus.push(gpu),
            }
        }
    }

    /// Every GPU, in catalog order.
    pub(crate) fn iter(&self) -> impl Iterator<Item = &Gpu> {
        self.gpus.iter()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn builtin_parses_and_has_the_fixed_ids() {
        let catalog = GpuCatalog::builtin();
        for id in [
            "rtx-3060-12gb",
            "rtx-4070",
            "rtx-3090",
            "rtx-4090",
            "rtx-a6000",
            "t4",
            "v100-16gb",
            "v100-32gb",
            "l4",
            "a100-40gb",
            "a100-80gb",
            "h100-80gb",
            "h200",
        ] {
            assert!(catalog.get(id).is_some(), "missing {id}");
        }
    }

    /// Every built-in card: one id or alias finds exactly one card; PyTorch sees less than the
    /// box says but no less than 90 % of it (the driver keeps a few hundred MiB); bf16 only from
    /// Ampere on (Pascal, Volta and Turing cards have no bf16 tensor cores).
    #[test]
    fn builtin_entries_are_consistent() {
        let catalog = GpuCatalog::builtin();
        let mut names = std::collections::BTreeSet::new();
        for g in catalog.iter() {
            for name in std::iter::once(&g.id).chain(&g.aliases) {
                assert!(names.insert(name.to_lowercase()), "{name} names two cards");
            }
            let boxed = g.memory_gb_marketing * (1u64 << 30) as f64;
            let seen = g.capacity_bytes as f64;
            assert!(
                seen < boxed && seen > 0.9 * boxed,
                "{}: {seen} of {boxed}",
                g.id
            );
            let pre_ampere = ["rtx-20", "titan-rtx", "t4", "v100", "p100"];
            let old = pre_ampere.iter().any(|p| g.id.starts_with(p));
            assert_eq!(g.bf16, !old, "{}: bf16", g.id);
        }
        for id in [
            "rtx-3080",
            "rtx-2080-ti",
            "rtx-4060-ti-16gb",
            "rtx-5090",
            "a10g",
            "l40s",
        ] {
            assert!(catalog.get(id).is_some(), "{id} missing");
        }
    }

    /// Every built-in figure names where it comes from: a printed `total_memory` or out-of-memory
    /// message (or nvidia-smi's total) with the thread or file that shows it. A figure without
    /// one starts with "not sourced" and says what it is derived or taken from; no figure is
    /// presented as sourced while being derived. Windows figures are above the Linux ones (WDDM
    /// reports more), ECC-on figures below ECC-off ones, newer drivers' figures below the entry's.
    #[test]
    fn builtin_capacities_name_their_source() {
        let kinds = ["device properties", "OOM message", "nvidia-smi"];
        let places = ["github.com/", "tests/data/"];
        for g in GpuCatalog::builtin().iter() {
            let sources = std::iter::once((None, &g.source)).chain(
                g.variants
                    .iter()
                    .map(|v| (Some((v.when, v.capacity_bytes)), &v.source)),
            );
            for (figure, s) in sources {
                let note = g.unsourced_capacity_note(figure);
                if s.starts_with(NOT_SOURCED) {
                    assert!(
                        s.contains("derived from") || s.contains("taken from"),
                        "{}: {s:?}",
                        g.id
                    );
                    assert!(note.is_some(), "{}: {s:?}", g.id);
                } else {
                    assert!(kinds.iter().any(|k| s.contains(k)), "{}: {s:?}", g.id);
                    let cited = places.iter().any(|p| s.contains(p));
                    assert!(cited, "{}: no thread or file in {s:?}", g.id);
                    for derived in ["derived", "less the driver reserve", "not sourced"] {
                        assert!(!s.contains(derived), "{}: {s:?}", g.id);
                    }
                    assert_eq!(note, None, "{}", g.id);
                }
            }
            for v in &g.variants {
                let (low, high) = match v.when {
                    VariantKind::Windows | VariantKind::EccOff => {
                        (g.capacity_bytes, v.capacity_bytes)
                    }
                    VariantKind::EccOn | VariantKind::NewerDriver => {
                        (v.capacity_bytes, g.capacity_bytes)
                    }
                };
                assert!(low < high, "{}: {:?}", g.id, v.when);
            }
        }
    }

    /// The note names the card, the setting, the figure (14,961 MiB = 14.61 GiB), what it rests
    /// on and the override.
    #[test]
    fn unsourced_note_says_what_the_figure_rests_on() {
        let catalog = GpuCatalog::builtin();
        let card = |id: &str| catalog.get(id).unwrap_or_else(|| panic!("{id} missing"));
        // The RTX A4000's ECC-on figure: 15985 MiB less 1/16 of 16 GiB (1024 MiB).
        assert_eq!(15985 - 1024, 14961);
        assert_eq!((14961.0_f64 / 1024.0 * 100.0).round() / 100.0, 14.61);
        let ecc_on = Some((VariantKind::EccOn, 14961u64 << 20));
        let note = card("rtx-a4000").unsourced_capacity_note(ecc_on).unwrap();
        assert!(
            note.starts_with("NVIDIA RTX A4000 with ECC on: its capacity in vramdoc's catalog, 14.61 GiB, is not sourced (no message with ECC on found)"),
            "{note}"
        );
        assert!(
            note.contains("--catalog FILE entry with id rtx-a4000"),
            "{note}"
        );
        // The RTX 4070's figure is a printed one (ComfyUI's 12557156352 B): no note.
        assert_eq!(card("rtx-4070").capacity_bytes, 12_557_156_352);
        assert_eq!(card("rtx-4070").unsourced_capacity_note(None), None);
        // A figure computed from a cited nvidia-smi total is a sourced one: no note.
        assert_eq!(card("rtx-5080").unsourced_capacity_note(None), None);
        // 24115 MiB = 23.55 GiB, the L4's ECC-off figure.
        let ecc_off = Some((VariantKind::EccOff, 24115u64 << 20));
        let l4 = card("l4").unsourced_capacity_note(ecc_off);
        assert!(l4
            .unwrap()
            .starts_with("NVIDIA L4 with ECC off: its capacity in vramdoc's catalog, 23.55 GiB"));
        assert_eq!(card("l4").unsourced_capacity_note(None), None);
        // A figure the card does not list has no note.
        let windows = Some((VariantKind::Windows, 24115u64 << 20));
        assert_eq!(card("l4").unsourced_capacity_note(windows), None);
    }

    /// The GDDR cards whose ECC can be switched list both states (ECC takes 1/16 of their memory,
    /// within the drivers' spread and 128 MiB); HBM cards, whose ECC costs no capacity, list none.
    #[test]
    fn switchable_ecc_cards_list_both_states() {
        let catalog = GpuCatalog::builtin();
        let ecc = |id: &str| -> Vec<&CapacityVariant> {
            let g = catalog.get(id).unwrap_or_else(|| panic!("{id} missing"));
            g.variants
                .iter()
                .filter(|v| matches!(v.when, VariantKind::EccOn | VariantKind::EccOff))
                .collect()
        };
        let gddr = [
            "t4",
            "a10",
            "a10g",
            "l4",
            "a40",
            "l40",
            "l40s",
            "rtx-a4000",
            "rtx-a5000",
            "rtx-a6000",
            "rtx-4000-ada",
            "rtx-6000-ada",
        ];
        for id in gddr {
            let variants = ecc(id);
            assert_eq!(variants.len(), 1, "{id}: one other ECC state");
            let g = catalog.get(id).unwrap_or_else(|| panic!("{id} missing"));
            let gap = g.capacity_bytes.abs_diff(variants[0].capacity_bytes) as f64;
            let sixteenth = g.memory_gb_marketing * (1u64 << 30) as f64 / 16.0;
            // Beyond the sixteenth, ECC on may keep more for the driver: an RTX 4000 Ada keeps
            // 446 MiB of nvidia-smi's total with it on (driver 575), 328 MiB with it off.
            assert!(
                (gap - sixteenth).abs() < 0.02 * sixteenth + (128u64 << 20) as f64,
                "{id}: ECC gap {gap} against {sixteenth}"
            );
        }
        for id in [
            "p100",
            "v100-16gb",
            "v100-32gb",
            "a30",
            "a100-40gb",
            "a100-80gb",
            "h100-80gb",
            "h200",
            "b200",
        ] {
            assert!(ecc(id).is_empty(), "{id}: HBM, no ECC variant");
        }
    }
}
