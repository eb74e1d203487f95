//! The event pass between pulldown-cmark's parser and its HTML writer: heading ids and
//! anchors, highlighted code blocks, scrollable tables, footnotes gathered at the end.

use std::collections::HashMap;

use pulldown_cmark::{Alignment, CodeBlockKind, CowStr, Event, HeadingLevel, Tag, TagEnd};

use super::escape::escape_html;
use super::highlight::push_code_html;
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

/// Rewrites a parsed event stream; see the module documentation.
pub(crate) struct Rewriter<'a> {
    table: Option<OpenTable>,
    ids: IdRegistry,
    headings: Vec<Heading>,
    out: Vec<Event<'a>>,
    open_heading: Option<(String, HeadingLevel)>,
    footnote_ids: HashMap<String, String>,
    /// Footnote ids in the order of their first reference (the writer numbers them so).
    footnote_order: Vec<String>,
    footnotes: Vec<Footnote<'a>>,
    current_footnote: Option<Footnote<'a>>,
}

impl<'a> Rewriter<'a> {
    /// Rewrites `events`; returns the events for the HTML writer and the page's headings.
    pub(crate) fn rewrite(mut events: Vec<Event<'a>>) -> (Vec<Event<'a>>, Vec<Heading>) {
        let mut ids = IdRegistry::default();
        for event in &events {
            if let Event::Start(Tag::Heading { id: Some(id), .. }) = event {
                ids.reserve(id);
            }
        }
        let mut this = Rewriter {
            table: None,
            ids,
            headings: Vec::new(),
            out: Vec::with_capacity(events.len() + 8),
            open_heading: None,
            footnote_ids: HashMap::new(),
            footnote_order: Vec::new(),
            footnotes: Vec::new(),
            current_footnote: None,
        };
        let mut i = 0;
        while i < events.len() {
            let event = std::mem::replace(&mut events[i], Event::SoftBreak);
            i += 1;
            match event {
                Event::Start(Tag::Heading {
                    level,
                    id,
                    classes,
                    attrs,
                }) => {
                    let text = heading_text(&events[i..]);
                    this.open_heading(level, id, &classes, &attrs, text);
                }
                Event::End(TagEnd::Heading(level)) => this.close_heading(level),
                Event::Start(Tag::CodeBlock(kind)) => {
                    let (html, consumed) = code_block(&kind, &events[i..]);
                    i += consumed;
                    this.emit(Event::Html(html.into()));
                }
                Event::Start(Tag::Table(alignments)) => {
                    // Scrollable when wider than the page: focusable for keyboard users.
                    this.emit(Event::Html(
                        "<div class=\"table-wrap\" tabindex=\"0\">\n".into(),
                    ));
                    this.table = Some(OpenTable {
                        alignments: alignments.clone(),
                        ..OpenTable::default()
                    });
                    this.emit(Event::Start(Tag::Table(alignments)));
                }
                Event::End(TagEnd::Table) => {
                    this.table = None;
                    this.emit(Event::End(TagEnd::Table));
                    this.emit(Event::Html("</div>\n".into()));
                }
                Event::Start(Tag::TableHead) => {
                    if let Some(t) = &mut this.table {
                        t.in_head = true;
                    }
                    this.emit(Event::Start(Tag::TableHead));
                }
                Event::End(TagEnd::TableHead) => {
                    if let Some(t) = &mut this.table {
                        t.in_head = false;
                    }
                    this.emit(Event::End(TagEnd::TableHead));
                }
                Event::Start(Tag::TableRow) => {
                    if let Some(t) = &mut this.table {
                        t.column = 0;
                    }
                    this.emit(Event::Start(Tag::TableRow));
                }
                Event::Start(Tag::TableCell) => match &mut this.table {
                    Some(t) if t.in_head => {
                        t.labels.push(cell_text(&events[i..]));
                        this.emit(Event::Start(Tag::TableCell));
                    }
                    Some(t) => {
                        let html = body_cell(t);
                        t.column += 1;
                        this.emit(Event::Html(html.into()));
                    }
                    None => this.emit(Event::Start(Tag::TableCell)),
                },
                Event::End(TagEnd::TableCell) => match &this.table {
                    Some(t) if !t.in_head => this.emit(Event::Html("</td>".into())),
                    _ => this.emit(Event::End(TagEnd::TableCell)),
                },
                Event::FootnoteReference(label) => {
                    let id = this.footnote_id(&label);
                    if !this.footnote_order.contains(&id) {
                        this.footnote_order.push(id.clone());
                    }
                    this.emit(Event::FootnoteReference(id.into()));
                }
                Event::Start(Tag::FootnoteDefinition(label)) => {
                    let id = this.footnote_id(&label);
                    let start = Event::Start(Tag::FootnoteDefinition(id.clone().into()));
                    this.current_footnote = Some(Footnote {
                        id,
                        events: vec![start],
                    });
                }
                Event::End(TagEnd::FootnoteDefinition) => {
                    if let Some(mut footnote) = this.current_footnote.take() {
                        footnote.events.push(Event::End(TagEnd::FootnoteDefinition));
                        this.footnotes.push(footnote);
                    }
                }
                other => this.emit(other),
            }
        }
        this.append_footnotes();
        (this.out, this.headings)
    }

    fn emit(&mut self, event: Event<'a>) {
        match &mut self.current_footnote {
            Some(footnote) => footnote.events.push(event),
            None => self.out.push(event),
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
            Some(id) => id.into_string(),
            None => self.ids.unique(&slugify(&text)),
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
            // Focusable, so it must be named for screen readers: the heading's own text
            // (language-neutral, and what a reader would copy the link for).
            let text = self.headings.last().map_or("", |h| h.text.as_str());
            tag.push_str(" <a class=\"anchor\" href=\"#");
            escape_html(&mut tag, &id);
            tag.push_str("\" aria-label=\"");
            escape_html(&mut tag, if text.is_empty() { &id } else { text });
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
        self.out
            .push(Event::Html("<section class=\"footnotes\">\n".into()));
        for footnote in self.footnotes.drain(..) {
            self.out.extend(footnote.events);
        }
        self.out.push(Event::Html("</section>\n".into()));
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

/// Plain text of a heading whose content starts at `rest[0]`: text and inline code, without
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

/// The plain text of a table cell whose content starts at `rest[0]`.
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

/// HTML for a code block whose content starts at `rest[0]`, and how many events it used
/// (text events plus the closing tag).
fn code_block(kind: &CodeBlockKind<'_>, rest: &[Event<'_>]) -> (String, usize) {
    let mut code = String::new();
    let mut consumed = 0;
    for event in rest {
        consumed += 1;
        match event {
            Event::Text(text) => code.push_str(text),
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
    (html, consumed)
}
