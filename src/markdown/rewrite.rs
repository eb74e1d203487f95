//! The event pass between pulldown-cmark's parser and its HTML writer: heading ids and
//! anchors, highlighted code blocks, scrollable tables, footnotes gathered at the end.

use std::collections::{HashMap, VecDeque};

use pulldown_cmark::{Alignment, CodeBlockKind, CowStr, Event, HeadingLevel, Tag, TagEnd};

use super::escape::escape_html;
use super::highlight::push_code_html;
use super::safety::{is_unsafe_url, is_vramdoc_markup};
use super::slug::{slugify, IdRegistry};
use super::Heading;

/// One footnote definition, moved out of the flow and emitted at the end of the page.
struct Footnote<'a> {
    id: String,
    events: Vec<Event<'a>>,
}

/// The table being rewritten: its column alignments and header texts, so each body cell can
/// carry its column's name (`data-label`), which the phone layout shows beside the value.
#[derive(Default)]
struct OpenTable {
    alignments: Vec<Alignment>,
    in_head: bool,
    labels: Vec<String>,
    column: usize,
}

/// Rewrites a parsed event stream as the HTML writer pulls it (see the module documentation);
/// only a heading, a code block or a header cell is held at a time, so memory does not grow with
/// the page.
pub(crate) struct Rewriter<'a, I> {
    source: I,
    table: Option<OpenTable>,
    /// Rewritten events not yet handed to the writer.
    pending: VecDeque<Event<'a>>,
    finished: bool,
    /// Keep raw HTML and links or images with unsafe URL schemes (`markdown.unsafe_html`).
    unsafe_html: bool,
    /// For each open link and image: true when it is dropped (an unsafe URL).
    dropped: Vec<bool>,
    ids: IdRegistry,
    /// The explicit `{#id}`s met so far, and the ids generated (headings, footnotes).
    explicit: Vec<String>,
    generated: Vec<String>,
    headings: Vec<Heading>,
    open_heading: Option<(String, HeadingLevel)>,
    footnote_ids: HashMap<String, String>,
    /// Footnote ids in the order of their first reference (the writer numbers them so).
    footnote_order: Vec<String>,
    footnotes: Vec<Footnote<'a>>,
    current_footnote: Option<Footnote<'a>>,
}

impl<'a, I: Iterator<Item = Event<'a>>> Iterator for Rewriter<'a, I> {
    type Item = Event<'a>;

    fn next(&mut self) -> Option<Event<'a>> {
        loop {
            if let Some(event) = self.pending.pop_front() {
                return Some(event);
            }
            if self.finished {
                return None;
            }
            match self.source.next() {
                Some(event) => self.handle(event),
                None => {
                    self.finished = true;
                    self.append_footnotes();
                }
            }
        }
    }
}

impl<'a, I: Iterator<Item = Event<'a>>> Rewriter<'a, I> {
    /// A rewriter of `source`; generated ids avoid `reserved` and each explicit heading id met
    /// before them ([`Rewriter::collided`] says when one met later was generated first).
    pub(crate) fn new(source: I, reserved: &[String], unsafe_html: bool) -> Self {
        let mut ids = IdRegistry::default();
        for id in reserved {
            ids.reserve(id);
        }
        Rewriter {
            source,
            table: None,
            pending: VecDeque::new(),
            finished: false,
            unsafe_html,
            dropped: Vec::new(),
            ids,
            explicit: Vec::new(),
            generated: Vec::new(),
            headings: Vec::new(),
            open_heading: None,
            footnote_ids: HashMap::new(),
            footnote_order: Vec::new(),
            footnotes: Vec::new(),
            current_footnote: None,
        }
    }

    /// The page's explicit heading ids, once every event has been pulled, if an id generated
    /// before one of them was met is that id (then a render with them all reserved differs).
    pub(crate) fn collided(&self) -> Option<Vec<String>> {
        let explicit: std::collections::HashSet<&str> =
            self.explicit.iter().map(String::as_str).collect();
        (self.generated.iter())
            .any(|id| explicit.contains(id.as_str()))
            .then(|| self.explicit.clone())
    }

    /// The page's headings, once every event has been pulled.
    pub(crate) fn into_headings(self) -> Vec<Heading> {
        self.headings
    }

    /// Rewrites one event from the parser (reading ahead through a heading or code block).
    fn handle(&mut self, event: Event<'a>) {
        match event {
            Event::Start(Tag::Heading {
                level,
                id,
                classes,
                attrs,
            }) => {
                let mut inner = Vec::new();
                for e in self.source.by_ref() {
                    let end = matches!(e, Event::End(TagEnd::Heading(_)));
                    inner.push(e);
                    if end {
                        break;
                    }
                }
                let text = heading_text(&inner);
                self.open_heading(level, id, &classes, &attrs, text);
                for e in inner {
                    self.handle(e);
                }
            }
            Event::End(TagEnd::Heading(level)) => self.close_heading(level),
            Event::Start(Tag::CodeBlock(kind)) => {
                let html = code_block(&kind, &mut self.source);
                self.emit(Event::Html(html.into()));
            }
            Event::Html(html) | Event::InlineHtml(html)
                if !self.unsafe_html && !is_vramdoc_markup(&html) => {}
            Event::Start(Tag::Link { ref dest_url, .. } | Tag::Image { ref dest_url, .. }) => {
                let drop = !self.unsafe_html && is_unsafe_url(dest_url);
                self.dropped.push(drop);
                if !drop {
                    self.emit(event);
                }
            }
            Event::End(TagEnd::Link | TagEnd::Image) => {
                if self.dropped.pop() != Some(true) {
                    self.emit(event);
                }
            }
            Event::Start(Tag::Table(alignments)) => {
                // Scrollable when wider than the page: focusable for keyboard users.
                self.emit(Event::Html(
                    "<div class=\"table-wrap\" tabindex=\"0\">\n".into(),
                ));
                self.table = Some(OpenTable {
                    alignments: alignments.clone(),
                    ..OpenTable::default()
                });
                self.emit(Event::Start(Tag::Table(alignments)));
            }
            Event::End(TagEnd::Table) => {
                self.table = None;
                self.emit(Event::End(TagEnd::Table));
                self.emit(Event::Html("</div>\n".into()));
            }
            Event::Start(Tag::TableHead) | Event::End(TagEnd::TableHead) => {
                if let Some(t) = &mut self.table {
                    t.in_head = matches!(event, Event::Start(_));
                }
                self.emit(event);
            }
            Event::Start(Tag::TableRow) => {
                if let Some(t) = &mut self.table {
                    t.column = 0;
                }
                self.emit(event);
            }
            Event::Start(Tag::TableCell) => self.open_cell(event),
            Event::End(TagEnd::TableCell) => match &self.table {
                Some(t) if !t.in_head => self.emit(Event::Html("</td>".into())),
                _ => self.emit(event),
            },
            Event::FootnoteReference(label) => {
                let id = self.footnote_id(&label);
                if !self.footnote_order.contains(&id) {
                    self.footnote_order.push(id.clone());
                }
                self.emit(Event::FootnoteReference(id.into()));
            }
            Event::Start(Tag::FootnoteDefinition(label)) => {
                let id = self.footnote_id(&label);
                let start = Event::Start(Tag::FootnoteDefinition(id.clone().into()));
                self.current_footnote = Some(Footnote {
                    id,
                    events: vec![start],
                });
            }
            Event::End(TagEnd::FootnoteDefinition) => {
                if let Some(mut footnote) = self.current_footnote.take() {
                    footnote.events.push(Event::End(TagEnd::FootnoteDefinition));
                    self.footnotes.push(footnote);
                }
            }
            other => self.emit(other),
        }
    }

    /// A table cell: a header cell is read ahead for its text (the column's label); a body cell
    /// opens with its column's alignment and label.
    fn open_cell(&mut self, event: Event<'a>) {
        let Some(t) = &mut self.table else {
            return self.emit(event);
        };
        if !t.in_head {
            let html = body_cell(t);
            t.column += 1;
            return self.emit(Event::Html(html.into()));
        }
        let mut inner = Vec::new();
        for e in self.source.by_ref() {
            let end = matches!(e, Event::End(TagEnd::TableCell));
            inner.push(e);
            if end {
                break;
            }
        }
        t.labels.push(cell_text(&inner));
        self.emit(event);
        for e in inner {
            self.handle(e);
        }
    }

    fn emit(&mut self, event: Event<'a>) {
        match &mut self.current_footnote {
            Some(footnote) => footnote.events.push(event),
            None => self.pending.push_back(event),
        }
    }

    fn open_heading(
        &mut self,
        level: HeadingLevel,
        explicit_id: Option<CowStr<'a>>,
        classes: &[CowStr<'a>],
        attrs: &[(CowStr<'a>, Option<CowStr<'a>>)],
        text: String,
    ) {
        let id = match explicit_id {
            Some(id) => {
                self.ids.reserve(&id);
                self.explicit.push(id.to_string());
                id.into_string()
            }
            None => {
                let id = self.ids.unique(&slugify(&text));
                self.generated.push(id.clone());
                id
            }
        };
        let mut tag = String::with_capacity(16 + id.len());
        tag.push('<');
        tag.push_str(level_tag(level));
        tag.push_str(" id=\"");
        escape_html(&mut tag, &id);
        tag.push('"');
        if !classes.is_empty() {
            tag.push_str(" class=\"");
            escape_html(&mut tag, &classes.join(" "));
            tag.push('"');
        }
        for (name, value) in attrs {
            tag.push(' ');
            escape_html(&mut tag, name);
            if let Some(value) = value {
                tag.push_str("=\"");
                escape_html(&mut tag, value);
                tag.push('"');
            }
        }
        tag.push('>');
        self.emit(Event::Html(tag.into()));
        self.headings.push(Heading {
            level: level as u8,
            id: id.clone(),
            text,
        });
        self.open_heading = Some((id, level));
    }

    fn close_heading(&mut self, level: HeadingLevel) {
        let mut tag = String::new();
        if let Some((id, _)) = self.open_heading.take() {
            // Focusable, so it must be named for screen readers: by the heading it links to
            // (language-neutral, and what a reader would copy the link for).
            tag.push_str(" <a class=\"anchor\" href=\"#");
            escape_html(&mut tag, &id);
            tag.push_str("\" aria-labelledby=\"");
            escape_html(&mut tag, &id);
            tag.push_str("\">#</a>");
        }
        tag.push_str("</");
        tag.push_str(level_tag(level));
        tag.push_str(">\n");
        self.emit(Event::Html(tag.into()));
    }

    /// The page-unique id for a footnote label (`fn-` + its slug), the same for every use.
    fn footnote_id(&mut self, label: &str) -> String {
        if let Some(id) = self.footnote_ids.get(label) {
            return id.clone();
        }
        let slug = slugify(label);
        let base = if slug.is_empty() {
            "fn".to_owned()
        } else {
            format!("fn-{slug}")
        };
        let id = self.ids.unique(&base);
        self.generated.push(id.clone());
        self.footnote_ids.insert(label.to_owned(), id.clone());
        id
    }

    /// Emits the definitions in a closing `<section>`, ordered by first reference so the
    /// writer's numbers count up; unreferenced ones follow in source order.
    fn append_footnotes(&mut self) {
        if let Some(unclosed) = self.current_footnote.take() {
            self.footnotes.push(unclosed);
        }
        if self.footnotes.is_empty() {
            return;
        }
        let order = &self.footnote_order;
        let rank = |id: &str| order.iter().position(|o| o == id).unwrap_or(usize::MAX);
        self.footnotes.sort_by_key(|f| rank(&f.id));
        self.pending
            .push_back(Event::Html("<section class=\"footnotes\">\n".into()));
        for footnote in self.footnotes.drain(..) {
            self.pending.extend(footnote.events);
        }
        self.pending.push_back(Event::Html("</section>\n".into()));
    }
}

/// The opening tag of a body cell: its column's alignment, as pulldown-cmark writes it, and its
/// column's header text as `data-label`.
fn body_cell(t: &OpenTable) -> String {
    let mut html = String::from("<td");
    match t.alignments.get(t.column) {
        Some(Alignment::Left) => html.push_str(" style=\"text-align: left\""),
        Some(Alignment::Center) => html.push_str(" style=\"text-align: center\""),
        Some(Alignment::Right) => html.push_str(" style=\"text-align: right\""),
        _ => {}
    }
    if let Some(label) = t.labels.get(t.column).filter(|l| !l.is_empty()) {
        html.push_str(" data-label=\"");
        escape_html(&mut html, label);
        html.push('"');
    }
    html.push('>');
    html
}

/// The plain text of a table cell whose content is `rest` (up to its closing tag).
fn cell_text(rest: &[Event<'_>]) -> String {
    let mut raw = String::new();
    for event in rest {
        match event {
            Event::End(TagEnd::TableCell) => break,
            Event::Text(text) | Event::Code(text) => raw.push_str(text),
            _ => {}
        }
    }
    raw.split_whitespace().collect::<Vec<_>>().join(" ")
}

fn level_tag(level: HeadingLevel) -> &'static str {
    match level {
        HeadingLevel::H1 => "h1",
        HeadingLevel::H2 => "h2",
        HeadingLevel::H3 => "h3",
        HeadingLevel::H4 => "h4",
        HeadingLevel::H5 => "h5",
        HeadingLevel::H6 => "h6",
    }
}

/// Plain text of a heading whose content is `rest` (up to its closing tag): text and inline code, without
/// markup or raw HTML tags, whitespace collapsed.
fn heading_text(rest: &[Event<'_>]) -> String {
    let mut raw = String::new();
    for event in rest {
        match event {
            Event::End(TagEnd::Heading(_)) => break,
            Event::Text(text) | Event::Code(text) => raw.push_str(text),
            Event::SoftBreak | Event::HardBreak => raw.push(' '),
            _ => {}
        }
    }
    raw.split_whitespace().collect::<Vec<_>>().join(" ")
}

/// HTML for a code block whose content comes next from `rest` (read up to the closing tag).
fn code_block<'a>(kind: &CodeBlockKind<'_>, rest: impl Iterator<Item = Event<'a>>) -> String {
    let mut code = String::new();
    for event in rest {
        match event {
            Event::Text(text) => code.push_str(&text),
            Event::End(TagEnd::CodeBlock) => break,
            _ => {}
        }
    }
    let lang = match kind {
        CodeBlockKind::Fenced(info) => info
            .split(|c: char| c.is_whitespace() || c == ',' || c == '{')
            .next()
            .filter(|lang| !lang.is_empty()),
        CodeBlockKind::Indented => None,
    };
    let mut html = String::with_capacity(code.len() * 2 + 80);
    // `tabindex`: a block wider than the page scrolls, and keyboard users must reach it.
    match lang {
        Some(lang) => {
            html.push_str("<pre class=\"code\" tabindex=\"0\" data-lang=\"");
            escape_html(&mut html, lang);
            html.push_str("\"><code class=\"language-");
            escape_html(&mut html, lang);
            html.push_str("\">");
        }
        None => html.push_str("<pre class=\"code\" tabindex=\"0\"><code>"),
    }
    push_code_html(&mut html, &code, lang);
    html.push_str("</code></pre>\n");
    html
}
