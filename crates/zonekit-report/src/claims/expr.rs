//! Where a claim's value comes from: an arithmetic expression over numbers read from a seed's
//! result files (the grammar is in the module doc of [`crate::claims`]).

use std::collections::HashMap;
use std::path::{Path, PathBuf};

use crate::html::parse_csv;

/// One number in a result file.
#[derive(Clone, Debug, PartialEq)]
pub enum Source {
    /// A cell of a table: a CSV file's, or a markdown table's in a `.md` file (every table in
    /// the file that has the selector's and the column's headers is searched). Exactly one row
    /// must match every `key = value` of the selector.
    Table { file: String, selector: Vec<(String, String)>, column: String },
    /// The number right after the last of `fragments`, each searched for after the previous one.
    Text { file: String, fragments: Vec<String> },
}

impl Source {
    pub fn file(&self) -> &str {
        match self {
            Source::Table { file, .. } | Source::Text { file, .. } => file,
        }
    }
}

#[derive(Clone, Debug, PartialEq)]
pub enum Expr {
    Number(f64),
    Source(Source),
    Neg(Box<Expr>),
    Binary(char, Box<Expr>, Box<Expr>),
    /// `min(...)` or `max(...)`: a group's worst or best.
    Call(String, Vec<Expr>),
}

/// One measurement of a claim: `name: EXPR` (a value) or `name: EXPR > EXPR` (an ordering, the
/// side the seed says is higher first).
#[derive(Clone, Debug, PartialEq)]
pub struct Measurement {
    pub name: String,
    pub value: Expr,
    pub below: Option<Expr>,
}

impl Measurement {
    /// A measurement named in parentheses is context: shown beside the judged ones, not judged.
    pub fn is_context(&self) -> bool {
        self.name.starts_with('(') && self.name.ends_with(')')
    }
}

pub fn parse_measurement(text: &str) -> Result<Measurement, String> {
    let (name, rest) =
        text.split_once(": ").ok_or_else(|| format!("`{text}`: a measurement is `name: EXPR` or `name: EXPR > EXPR` (the name ends at the first colon and space)"))?;
    let name = name.trim();
    if name.is_empty() || name.contains(['[', '~', '"']) {
        return Err(format!("`{text}`: a measurement starts with its name and a colon"));
    }
    let mut p = Parser { s: rest.as_bytes(), text: rest, i: 0 };
    let value = p.expr()?;
    p.skip_space();
    let below = if p.eat(b'>') { Some(p.expr()?) } else { None };
    p.skip_space();
    if p.i != p.s.len() {
        return Err(format!("`{}`: unexpected `{}`", text.trim(), &rest[p.i..]));
    }
    Ok(Measurement { name: name.to_string(), value, below })
}

pub fn parse_expr(text: &str) -> Result<Expr, String> {
    let mut p = Parser { s: text.as_bytes(), text, i: 0 };
    let e = p.expr()?;
    p.skip_space();
    if p.i != p.s.len() {
        return Err(format!("`{text}`: unexpected `{}`", &text[p.i..]));
    }
    Ok(e)
}

struct Parser<'a> {
    s: &'a [u8],
    text: &'a str,
    i: usize,
}

impl Parser<'_> {
    fn skip_space(&mut self) {
        while self.i < self.s.len() && self.s[self.i].is_ascii_whitespace() {
            self.i += 1;
        }
    }

    fn eat(&mut self, c: u8) -> bool {
        self.skip_space();
        if self.s.get(self.i) == Some(&c) {
            self.i += 1;
            true
        } else {
            false
        }
    }

    fn expr(&mut self) -> Result<Expr, String> {
        let mut left = self.term()?;
        loop {
            if self.eat(b'+') {
                left = Expr::Binary('+', Box::new(left), Box::new(self.term()?));
            } else if self.eat(b'-') {
                left = Expr::Binary('-', Box::new(left), Box::new(self.term()?));
            } else {
                return Ok(left);
            }
        }
    }

    fn term(&mut self) -> Result<Expr, String> {
        let mut left = self.factor()?;
        loop {
            if self.eat(b'*') {
                left = Expr::Binary('*', Box::new(left), Box::new(self.factor()?));
            } else if self.eat(b'/') {
                left = Expr::Binary('/', Box::new(left), Box::new(self.factor()?));
            } else {
                return Ok(left);
            }
        }
    }

    fn factor(&mut self) -> Result<Expr, String> {
        self.skip_space();
        let Some(&c) = self.s.get(self.i) else { return Err(format!("`{}`: an expression ends too soon", self.text.trim())) };
        if c == b'(' {
            self.i += 1;
            let e = self.expr()?;
            if !self.eat(b')') {
                return Err(format!("`{}`: `)` missing", self.text.trim()));
            }
            return Ok(e);
        }
        if c == b'-' {
            self.i += 1;
            return Ok(Expr::Neg(Box::new(self.factor()?)));
        }
        if c.is_ascii_digit() || (c == b'.' && self.s.get(self.i + 1).is_some_and(u8::is_ascii_digit)) {
            let start = self.i;
            while self.i < self.s.len() && (self.s[self.i].is_ascii_digit() || self.s[self.i] == b'.') {
                self.i += 1;
            }
            let t = &self.text[start..self.i];
            return t.parse().map(Expr::Number).map_err(|_| format!("`{t}` is not a number"));
        }
        for f in ["min", "max"] {
            if self.text[self.i..].starts_with(f) && self.s.get(self.i + f.len()) == Some(&b'(') {
                self.i += f.len() + 1;
                let mut args = vec![self.expr()?];
                while self.eat(b',') {
                    args.push(self.expr()?);
                }
                if !self.eat(b')') {
                    return Err(format!("`{}`: `)` missing after {f}'s arguments", self.text.trim()));
                }
                return Ok(Expr::Call(f.to_string(), args));
            }
        }
        self.source().map(Expr::Source)
    }

    /// `FILE[key=value & key=value].column`, `FILE[...]."a column"` or `FILE~"text"~"text"`.
    fn source(&mut self) -> Result<Source, String> {
        let start = self.i;
        while self.i < self.s.len() && !matches!(self.s[self.i], b'[' | b'~' | b')' | b',' | b'>') && !self.s[self.i].is_ascii_whitespace() {
            self.i += 1;
        }
        let file = self.text[start..self.i].to_string();
        if file.is_empty() {
            return Err(format!("`{}`: a number, a source or `(` expected at `{}`", self.text.trim(), &self.text[start..]));
        }
        match self.s.get(self.i) {
            Some(b'[') => {
                self.i += 1;
                let mut selector = Vec::new();
                loop {
                    let key = self.until(b"=]")?.trim().to_string();
                    if self.s[self.i] != b'=' {
                        return Err(format!("`{}`: a selector is `[column=value & ...]`", self.text.trim()));
                    }
                    self.i += 1;
                    let value = self.value()?;
                    selector.push((key, value));
                    match self.s.get(self.i) {
                        Some(b'&') => self.i += 1,
                        Some(b']') => {
                            self.i += 1;
                            break;
                        }
                        _ => return Err(format!("`{}`: `]` missing", self.text.trim())),
                    }
                }
                if self.s.get(self.i) != Some(&b'.') {
                    return Err(format!("`{}`: `.column` missing after {file}'s selector", self.text.trim()));
                }
                self.i += 1;
                let column = if self.s.get(self.i) == Some(&b'"') {
                    self.quoted()?
                } else {
                    let start = self.i;
                    while self.i < self.s.len() && (self.s[self.i].is_ascii_alphanumeric() || self.s[self.i] == b'_') {
                        self.i += 1;
                    }
                    self.text[start..self.i].to_string()
                };
                if column.is_empty() {
                    return Err(format!("`{}`: a column name missing after {file}'s selector", self.text.trim()));
                }
                Ok(Source::Table { file, selector, column })
            }
            Some(b'~') => {
                let mut fragments = Vec::new();
                while self.s.get(self.i) == Some(&b'~') {
                    self.i += 1;
                    fragments.push(self.quoted()?);
                }
                Ok(Source::Text { file, fragments })
            }
            _ => Err(format!("`{}`: `{file}` needs `[selector].column` or `~\"text\"`", self.text.trim())),
        }
    }

    /// Text up to (not past) one of `stops`, which must come.
    fn until(&mut self, stops: &[u8]) -> Result<&str, String> {
        let start = self.i;
        while self.i < self.s.len() && !stops.contains(&self.s[self.i]) {
            self.i += 1;
        }
        if self.i == self.s.len() {
            return Err(format!("`{}`: `]` missing", self.text.trim()));
        }
        Ok(&self.text[start..self.i])
    }

    /// A selector's value: `"quoted"` or the text up to `&` or `]`, trimmed.
    fn value(&mut self) -> Result<String, String> {
        self.skip_space();
        if self.s.get(self.i) == Some(&b'"') {
            let v = self.quoted()?;
            self.skip_space();
            return Ok(v);
        }
        Ok(self.until(b"&]")?.trim().to_string())
    }

    fn quoted(&mut self) -> Result<String, String> {
        if self.s.get(self.i) != Some(&b'"') {
            return Err(format!("`{}`: `\"` expected", self.text.trim()));
        }
        self.i += 1;
        let start = self.i;
        while self.i < self.s.len() && self.s[self.i] != b'"' {
            self.i += 1;
        }
        if self.i == self.s.len() {
            return Err(format!("`{}`: a closing `\"` missing", self.text.trim()));
        }
        self.i += 1;
        Ok(self.text[start..self.i - 1].to_string())
    }
}

/// The first number at the start of `s` (after spaces): `-` or `−`, digits with thousands
/// commas, a fraction. `None` when `s` does not start with one.
pub fn leading_number(s: &str) -> Option<f64> {
    let s = s.trim_start();
    let (negative, s) = match s.strip_prefix('-').or_else(|| s.strip_prefix('−')) {
        Some(rest) => (true, rest),
        None => (false, s),
    };
    let b = s.as_bytes();
    let mut digits = String::new();
    let mut i = 0;
    while i < b.len() {
        if b[i].is_ascii_digit() {
            digits.push(b[i] as char);
        } else if b[i] == b',' && i > 0 && b.len() >= i + 4 && b[i + 1..i + 4].iter().all(u8::is_ascii_digit) && b.get(i + 4).is_none_or(|c| !c.is_ascii_digit()) {
            // a thousands separator
        } else if b[i] == b'.' && b.get(i + 1).is_some_and(u8::is_ascii_digit) && !digits.contains('.') {
            digits.push('.');
        } else {
            break;
        }
        i += 1;
    }
    if digits.is_empty() || digits.starts_with('.') {
        return None;
    }
    let v: f64 = digits.parse().ok()?;
    Some(if negative { -v } else { v })
}

/// The result files of one seed, read once each.
pub struct Files {
    dir: PathBuf,
    text: HashMap<String, Result<String, String>>,
}

impl Files {
    pub fn new(dir: &Path) -> Self {
        Files { dir: dir.to_path_buf(), text: HashMap::new() }
    }

    fn read(&mut self, file: &str) -> Result<&str, String> {
        let dir = &self.dir;
        let entry = self.text.entry(file.to_string()).or_insert_with(|| {
            if file.contains("..") || file.starts_with('/') {
                return Err(format!("{file}: a source must be a file under {}", dir.display()));
            }
            std::fs::read_to_string(dir.join(file)).map_err(|e| format!("{}: {e}", dir.join(file).display()))
        });
        entry.as_deref().map_err(Clone::clone)
    }

    pub fn eval(&mut self, e: &Expr) -> Result<f64, String> {
        Ok(match e {
            Expr::Number(v) => *v,
            Expr::Source(s) => self.lookup(s)?,
            Expr::Neg(e) => -self.eval(e)?,
            Expr::Binary(op, a, b) => {
                let (a, b) = (self.eval(a)?, self.eval(b)?);
                match op {
                    '+' => a + b,
                    '-' => a - b,
                    '*' => a * b,
                    '/' if b == 0.0 => return Err("division by zero".into()),
                    _ => a / b,
                }
            }
            Expr::Call(f, args) => {
                let values = args.iter().map(|a| self.eval(a)).collect::<Result<Vec<_>, _>>()?;
                let pick = if f == "min" { f64::min } else { f64::max };
                values.into_iter().reduce(pick).expect("the parser takes at least one argument")
            }
        })
    }

    pub fn lookup(&mut self, s: &Source) -> Result<f64, String> {
        let dir = self.dir.clone();
        let path = dir.join(s.file());
        let text = self.read(s.file())?;
        match s {
            Source::Text { fragments, .. } => {
                let mut at = 0;
                for f in fragments {
                    match text[at..].find(f.as_str()) {
                        Some(k) => at += k + f.len(),
                        None => return Err(format!("{}: no `{f}` (after the fragments before it)", path.display())),
                    }
                }
                leading_number(&text[at..]).ok_or_else(|| format!("{}: no number right after `{}`", path.display(), fragments.last().map_or("", String::as_str)))
            }
            Source::Table { file, selector, column } => {
                let tables = if file.ends_with(".md") { markdown_tables(text) } else { vec![parse_csv(text)] };
                let mut found = Vec::new();
                let mut has_columns = false;
                for t in &tables {
                    let Some(header) = t.first() else { continue };
                    let index = |name: &str| header.iter().position(|h| h.trim() == name);
                    let Some(col) = index(column) else { continue };
                    let Some(keys) = selector.iter().map(|(k, v)| index(k).map(|i| (i, v))).collect::<Option<Vec<_>>>() else { continue };
                    has_columns = true;
                    for row in &t[1..] {
                        if keys.iter().all(|(i, v)| row.get(*i).is_some_and(|c| c.trim() == v.as_str())) {
                            found.push(row.get(col).cloned().unwrap_or_default());
                        }
                    }
                }
                let shown = selector.iter().map(|(k, v)| format!("{k}={v}")).collect::<Vec<_>>().join(" & ");
                if !has_columns {
                    let names = std::iter::once(column.as_str()).chain(selector.iter().map(|(k, _)| k.as_str())).collect::<Vec<_>>().join(", ");
                    return Err(format!("{}: no table has the columns {names}", path.display()));
                }
                match found.as_slice() {
                    [cell] => leading_number(cell).ok_or_else(|| format!("{}: row [{shown}], column {column}: `{cell}` is not a number", path.display())),
                    [] => Err(format!("{}: no row [{shown}]", path.display())),
                    many => Err(format!("{}: {} rows match [{shown}]; the selector must name one", path.display(), many.len())),
                }
            }
        }
    }
}

/// Every markdown table in `text` (lines starting with `|`; the separator row left out), each
/// as rows of trimmed cells, the header first.
pub fn markdown_tables(text: &str) -> Vec<Vec<Vec<String>>> {
    let mut tables = Vec::new();
    let mut current: Vec<Vec<String>> = Vec::new();
    for line in text.lines().chain(std::iter::once("")) {
        let line = line.trim();
        if line.starts_with('|') {
            let cells = table_cells(line);
            if !cells.iter().all(|c| !c.is_empty() && c.chars().all(|ch| matches!(ch, '-' | ':'))) {
                current.push(cells);
            }
        } else if !current.is_empty() {
            tables.push(std::mem::take(&mut current));
        }
    }
    tables
}

/// The cells of one markdown table line, trimmed.
pub fn table_cells(line: &str) -> Vec<String> {
    let inner = line.trim().trim_start_matches('|');
    let inner = inner.strip_suffix('|').unwrap_or(inner);
    inner.split('|').map(|c| c.trim().to_string()).collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn expressions_parse_with_precedence_groups_and_every_source_form() {
        let m = parse_measurement(
            "synthetic: 100 * (a.csv[label=x (y, z) & section=fig5.1].hit_ratio - b.md[policy=\"belady\"].\"hit ratio\") > max(c.info~\"block\"~\"writes, \", 2)",
        )
        .unwrap();
        assert_eq!(m.name, "synthetic");
        let Expr::Binary('*', _, inner) = &m.value else { panic!("{:?}", m.value) };
        let Expr::Binary('-', a, b) = inner.as_ref() else { panic!() };
        assert_eq!(
            **a,
            Expr::Source(Source::Table {
                file: "a.csv".into(),
                selector: vec![("label".into(), "x (y, z)".into()), ("section".into(), "fig5.1".into())],
                column: "hit_ratio".into()
            })
        );
        assert_eq!(**b, Expr::Source(Source::Table { file: "b.md".into(), selector: vec![("policy".into(), "belady".into())], column: "hit ratio".into() }));
        let Some(Expr::Call(f, args)) = &m.below else { panic!() };
        assert_eq!(f, "max");
        assert_eq!(args[0], Expr::Source(Source::Text { file: "c.info".into(), fragments: vec!["block".into(), "writes, ".into()] }));
        assert_eq!(parse_expr("1 - 2 - 3").map(|e| Files::new(Path::new(".")).eval(&e)), Ok(Ok(-4.0)));
        assert_eq!(parse_expr("2 + 3 * 4").map(|e| Files::new(Path::new(".")).eval(&e)), Ok(Ok(14.0)));
    }

    #[test]
    fn malformed_measurements_are_refused() {
        for bad in ["no colon", "x: a.csv", "x: a.csv[label=1.y", "x: a.csv[label=1]", "x: (1 + 2", "x: 1 >", "x: 1 2", "x: a.md~\"open"] {
            assert!(parse_measurement(bad).is_err(), "{bad}");
        }
    }

    #[test]
    fn leading_numbers_read_signs_thousands_and_fractions() {
        assert_eq!(leading_number(" 41.35 %"), Some(41.35));
        assert_eq!(leading_number("−0.33 points"), Some(-0.33));
        assert_eq!(leading_number("1,602,300 blocks"), Some(1602300.0));
        assert_eq!(leading_number("3,7"), Some(3.0));
        assert_eq!(leading_number("15410008 reads)"), Some(15410008.0));
        assert_eq!(leading_number("n/a"), None);
    }

    #[test]
    fn sources_read_csv_markdown_and_text_and_name_what_is_missing() {
        let dir = tempfile::tempdir().unwrap();
        std::fs::write(dir.path().join("r.csv"), "section,label,hit_ratio\nfig5.1,\"a, b\",0.4135\nfig4.1,\"a, b\",0.5\n").unwrap();
        std::fs::write(
            dir.path().join("s.md"),
            "# t\n\n| policy | hit ratio |\n|---|---|\n| belady | 68.63 % |\n| lru | 43.42 % |\n\n- x: 23054 GC rounds; WAF per GC: mean 4.74, median 4.71\n",
        )
        .unwrap();
        let mut f = Files::new(dir.path());
        let v = |f: &mut Files, t: &str| parse_expr(t).and_then(|e| f.eval(&e));
        assert!((v(&mut f, "100 * r.csv[section=fig5.1 & label=a, b].hit_ratio").unwrap() - 41.35).abs() < 1e-9);
        assert_eq!(v(&mut f, "s.md[policy=belady].\"hit ratio\""), Ok(68.63));
        assert_eq!(v(&mut f, "s.md~\"x:\"~\"mean \""), Ok(4.74));
        let err = |f: &mut Files, t: &str| v(f, t).unwrap_err();
        assert!(err(&mut f, "r.csv[label=a, b].hit_ratio").contains("2 rows match"));
        assert!(err(&mut f, "r.csv[label=zzz].hit_ratio").contains("no row [label=zzz]"));
        assert!(err(&mut f, "r.csv[label=a, b & section=fig5.1].waf").contains("no table has the columns waf"));
        assert!(err(&mut f, "gone.csv[label=a].x").contains("gone.csv"));
        assert!(err(&mut f, "s.md~\"median \"~\"mean \"").contains("no `mean `"));
        assert!(err(&mut f, "../r.csv[label=a].x").contains("under"));
    }
}
