//! What a guide's translations must share: the scenario and the variants' ids and `set:` values,
//! compared as values (key order and `12` against `12.0` do not matter), and the first place
//! where two translations differ.

use yaml_serde::Value as Yaml;

use super::Page;

/// A value in a canonical spelling: mappings with sorted keys, numbers by value, strings quoted
/// (so `"12"` differs from `12`).
pub(crate) fn canonical(v: &Yaml) -> String {
    match v {
        Yaml::Null => "null".into(),
        Yaml::Bool(b) => b.to_string(),
        Yaml::Number(n) => {
            if let Some(i) = n.as_i64() {
                i.to_string()
            } else if let Some(u) = n.as_u64() {
                u.to_string()
            } else {
                let f = n.as_f64().unwrap_or(f64::NAN);
                if f.fract() == 0.0 && f.abs() < 9.0e15 {
                    (f as i64).to_string()
                } else {
                    f.to_string()
                }
            }
        }
        Yaml::String(s) => serde_json::to_string(s).unwrap_or_default(),
        Yaml::Sequence(items) => {
            let parts: Vec<String> = items.iter().map(canonical).collect();
            format!("[{}]", parts.join(","))
        }
        Yaml::Mapping(m) => {
            let mut parts: Vec<String> = m
                .iter()
                .map(|(k, v)| format!("{}:{}", canonical(k), canonical(v)))
                .collect();
            parts.sort();
            format!("{{{}}}", parts.join(","))
        }
        Yaml::Tagged(t) => format!("!{} {}", t.tag, canonical(&t.value)),
    }
}

/// The canonical text of what translations share, for hashing: equal for two pages exactly when
/// [`first_difference`] finds nothing.
pub(crate) fn shared_text(page: &Page) -> Option<String> {
    let (scenario, _) = page.front.scenario.as_ref()?;
    let mut out = canonical(scenario);
    for v in &page.front.variants {
        let set: Vec<(String, String)> = sorted_set(v);
        out.push_str(&format!(
            "\n{}={set:?}",
            serde_json::to_string(&v.id).unwrap_or_default()
        ));
    }
    Some(out)
}

fn sorted_set(v: &super::Variant) -> Vec<(String, String)> {
    let mut set: Vec<(String, String)> = v
        .set
        .iter()
        .map(|s| (s.key.clone(), canonical(&s.value)))
        .collect();
    set.sort();
    set
}

/// Where two translations disagree: the key, its value in each, and the line in the second.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct Difference {
    /// `scenario`, `scenario.<key>`, `variants[<n>].id` or `variants.<id>.set.<key>`.
    pub(crate) key: String,
    /// The value in the first page, as written (`(not set)` when absent).
    pub(crate) first: String,
    /// The value in the second page.
    pub(crate) second: String,
    /// 1-based line in the second page's file.
    pub(crate) line: usize,
}

/// The first difference between the shared parts of two translations, in the first page's order.
pub(crate) fn first_difference(first: &Page, second: &Page) -> Option<Difference> {
    let absent = || "(not set)".to_string();
    let diff = |key: String, a: Option<&Yaml>, b: Option<&Yaml>, line: usize| {
        let same = match (a, b) {
            (Some(a), Some(b)) => canonical(a) == canonical(b),
            (None, None) => true,
            _ => false,
        };
        (!same).then(|| Difference {
            key,
            first: a.map_or_else(absent, shown),
            second: b.map_or_else(absent, shown),
            line,
        })
    };
    let (fs, ss) = (&first.front.scenario, &second.front.scenario);
    let scen_line = ss.as_ref().map_or(1, |(_, l)| *l);
    match (fs, ss) {
        (Some((Yaml::Mapping(a), _)), Some((Yaml::Mapping(b), line))) => {
            let keys = a.keys().chain(b.keys().filter(|k| !a.contains_key(*k)));
            for k in keys {
                let name = k.as_str().map_or_else(|| canonical(k), str::to_string);
                let kline = second.front.scenario_key_line(&name).unwrap_or(*line);
                if let Some(d) = diff(format!("scenario.{name}"), a.get(k), b.get(k), kline) {
                    return Some(d);
                }
            }
        }
        (a, b) => {
            if let Some(d) = diff(
                "scenario".into(),
                a.as_ref().map(|x| &x.0),
                b.as_ref().map(|x| &x.0),
                scen_line,
            ) {
                return Some(d);
            }
        }
    }
    let (fv, sv) = (&first.front.variants, &second.front.variants);
    let last_line = sv.last().map_or(scen_line, |v| v.line);
    for i in 0..fv.len().max(sv.len()) {
        let (a, b) = (fv.get(i), sv.get(i));
        let line = b.map_or(last_line, |v| v.line);
        let id = |v: Option<&super::Variant>| v.map_or_else(absent, |v| v.id.clone());
        if a.map(|v| &v.id) != b.map(|v| &v.id) {
            return Some(Difference {
                key: format!("variants[{}].id", i + 1),
                first: id(a),
                second: id(b),
                line,
            });
        }
        let (Some(a), Some(b)) = (a, b) else { continue };
        let get = |v: &super::Variant, k: &str| v.set.iter().find(|s| s.key == k).cloned();
        let keys = a
            .set
            .iter()
            .chain(b.set.iter().filter(|s| get(a, &s.key).is_none()));
        for s in keys {
            let (x, y) = (get(a, &s.key), get(b, &s.key));
            let kline = y.as_ref().map_or(b.line, |y| y.line);
            let key = format!("variants.{}.set.{}", a.id, s.key);
            if let Some(d) = diff(
                key,
                x.as_ref().map(|x| &x.value),
                y.as_ref().map(|y| &y.value),
                kline,
            ) {
                return Some(d);
            }
        }
    }
    None
}

/// A value as a reader would write it.
fn shown(v: &Yaml) -> String {
    match v {
        Yaml::String(s) => s.clone(),
        Yaml::Number(n) => n.to_string(),
        Yaml::Bool(b) => b.to_string(),
        Yaml::Null => "null".into(),
        other => yaml_serde::to_string(other)
            .unwrap_or_default()
            .trim_end()
            .replace('\n', " "),
    }
}
