//! What readers of a translation see of its state: a stale section keeps its translated text
//! under a notice that the source changed since, linking to the source's section; a missing
//! section is the source's, under a notice that it is not translated yet. Both as Markdown
//! blockquotes inserted into the translation's body before it is expanded, so the HTML page and
//! the Markdown edition carry the same notices.

use super::sections::{Section, INTRO};
use super::status::{PageStatus, State};

/// The notice texts of one language and where the source's page is.
pub(crate) struct NoticeText<'a> {
    /// "This section changed in the English version after it was translated."
    pub(crate) stale: &'a str,
    /// "This section is not translated yet; it is shown in English."
    pub(crate) missing: &'a str,
    /// "Read it in English"
    pub(crate) link: &'a str,
    /// The source page's URL (relative to the translation's page), without a fragment.
    pub(crate) source_url: &'a str,
}

impl NoticeText<'_> {
    /// The blockquote for section `id` in `state`.
    pub(crate) fn notice(&self, id: &str, state: State) -> String {
        let text = match state {
            State::Missing => self.missing,
            _ => self.stale,
        };
        let target = if id == INTRO {
            self.source_url.to_string()
        } else {
            format!("{}#{id}", self.source_url)
        };
        format!("> {text} [{}]({target})\n\n", self.link)
    }
}

/// [`with_notices_split`], splitting both bodies into sections.
#[cfg(test)]
pub(crate) fn with_notices(
    translation: &str,
    source: &str,
    status: &PageStatus,
    text: &NoticeText<'_>,
) -> String {
    use super::sections::sections;
    with_notices_split(
        translation,
        &sections(translation),
        &sections(source),
        status,
        text,
    )
}

/// `translation` (split into the sections `translated`) with a notice under each stale
/// section's heading, and each missing section taken from the source (split into `original`)
/// with its notice, after the translated section that precedes it in the source. Unchanged when
/// every section is current.
pub(crate) fn with_notices_split(
    translation: &str,
    translated: &[Section<'_>],
    original: &[Section<'_>],
    status: &PageStatus,
    text: &NoticeText<'_>,
) -> String {
    let mut out = String::with_capacity(translation.len() + 256);
    // The text before the first section (blank lines) stays where it is.
    let first = translated.first().map_or(translation.len(), |s| s.start);
    out.push_str(&translation[..first]);
    // Missing source sections, by the index of the translated section they follow (0: first).
    let mut inserts: Vec<Vec<&Section<'_>>> = vec![Vec::new(); translated.len() + 1];
    for (k, s) in original.iter().enumerate() {
        if status.state_of(&s.id) != Some(State::Missing) {
            continue;
        }
        let after = original[..k]
            .iter()
            .rev()
            .find_map(|p| translated.iter().position(|t| t.id == p.id))
            .map_or(0, |j| j + 1);
        inserts[after].push(s);
    }
    for (j, missing) in inserts.iter().enumerate() {
        for s in missing {
            push_section(&mut out, s, Some(text.notice(&s.id, State::Missing)));
        }
        if let Some(t) = translated.get(j) {
            let notice = (status.state_of(&t.id) == Some(State::Stale))
                .then(|| text.notice(&t.id, State::Stale));
            push_section(&mut out, t, notice);
        }
    }
    out
}

/// Appends section `s`, with `notice` after its heading (before its text for the intro), and a
/// blank line after it so the next section's heading starts a block.
fn push_section(out: &mut String, s: &Section<'_>, notice: Option<String>) {
    let (head, rest) = s.text.split_at(s.heading_end);
    out.push_str(head);
    let mut rest = rest;
    if let Some(n) = notice {
        if !head.is_empty() && !head.ends_with('\n') {
            out.push('\n');
        }
        out.push('\n');
        out.push_str(&n);
        rest = rest.trim_start_matches(['\n', '\r']);
    }
    out.push_str(rest);
    if !out.ends_with("\n\n") {
        out.push_str(if out.ends_with('\n') { "\n" } else { "\n\n" });
    }
}

#[cfg(test)]
mod tests {
    use super::super::sections::{ids, sections};
    use super::super::status::{compare, SourceSection};
    use super::*;

    const TEXT: NoticeText<'static> = NoticeText {
        stale: "Cambió.",
        missing: "Sin traducir.",
        link: "Ver en inglés",
        source_url: "../../en/g/index.html",
    };

    fn status(en: &str, es: &str, current: &[&str]) -> PageStatus {
        let source = SourceSection::of(&sections(en));
        let found = sections(es);
        compare(&source, &ids(&found), |id| {
            current
                .contains(&id)
                .then(|| source.iter().find(|s| s.id == id).map(|s| s.hash))
                .flatten()
        })
    }

    #[test]
    fn stale_sections_get_a_notice_and_missing_ones_the_source_text() {
        let en = "Intro.\n\n## A\n\nAlpha.\n\n## B\n\nBeta.\n\n## C\n\nGamma.\n";
        let es = "Intro es.\n\n## Uno {#a}\n\nAlfa.\n\n## Tres {#c}\n\nGama.";
        let s = status(en, es, &["_intro", "c"]);
        let out = with_notices(es, en, &s, &TEXT);
        assert_eq!(
            out,
            "Intro es.\n\n## Uno {#a}\n\n> Cambió. [Ver en inglés](../../en/g/index.html#a)\n\nAlfa.\n\n\
             ## B\n\n> Sin traducir. [Ver en inglés](../../en/g/index.html#b)\n\nBeta.\n\n\
             ## Tres {#c}\n\nGama.\n\n"
        );
        let full = "Intro es.\n\n## Uno {#a}\n\nAlfa.\n\n## Dos {#b}\n\nBeta.\n\n## Tres {#c}\n\nGama.\n\n";
        let all = status(en, full, &["_intro", "a", "b", "c"]);
        assert_eq!(with_notices(full, en, &all, &TEXT), full);
    }

    #[test]
    fn a_stale_intro_gets_its_notice_first() {
        let en = "Intro.\n\n## A\n\nAlpha.\n";
        let es = "Intro es.\n\n## Uno {#a}\n\nAlfa.\n";
        let out = with_notices(es, en, &status(en, es, &["a"]), &TEXT);
        assert!(
            out.starts_with("\n> Cambió. [Ver en inglés](../../en/g/index.html)\n\nIntro es."),
            "{out}"
        );
    }
}
