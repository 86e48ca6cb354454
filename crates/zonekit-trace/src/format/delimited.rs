//! Any delimited text trace, given which column holds what and in which unit.
//!
//! A mapping is written `time=4:us offset=2:sector size=3:byte op=1:R/W volume=0` (columns are
//! 0-based; `;` may separate the entries too). Units: time `s`, `ms`, `us`, `ns`; offset and size
//! `byte`, `sector` (512 B), `kib`, `4k`. `op=COL:READ/WRITE` names the read and write tokens.
//! `volume` is optional (default 0) and may be any text (interned to an id).

use std::collections::HashMap;

use super::LineFormat;
use crate::record::{parse_scaled, FieldError, Op, Record, SpecError};

#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Delimited {
    /// `None` splits on runs of whitespace.
    pub delimiter: Option<char>,
    pub time: (usize, TimeUnit),
    pub offset: (usize, u64),
    pub size: (usize, u64),
    pub op: (usize, String, String),
    pub volume: Option<usize>,
    /// Skip the first line.
    pub header: bool,
    volumes: HashMap<String, u32>,
}

#[derive(Copy, Clone, Debug, PartialEq, Eq)]
pub enum TimeUnit {
    Seconds,
    Millis,
    Micros,
    Nanos,
}

impl Delimited {
    /// Parses a column mapping (see the module docs).
    pub fn parse(mapping: &str, delimiter: Option<char>, header: bool) -> Result<Delimited, SpecError> {
        let mut time = None;
        let mut offset = None;
        let mut size = None;
        let mut op = None;
        let mut volume = None;
        let mut named = std::collections::BTreeSet::new();
        for entry in mapping.split(|c: char| c.is_whitespace() || c == ';').filter(|e| !e.is_empty()) {
            let (key, spec) = entry.split_once('=').ok_or_else(|| format!("{entry:?}: expected NAME=COLUMN[:UNIT]"))?;
            if !named.insert(key) {
                return Err(format!("{entry:?}: the {key} column is mapped twice").into());
            }
            let (col, unit) = spec.split_once(':').unwrap_or((spec, ""));
            let col: usize = col.parse().map_err(|_| format!("{entry:?}: column {col:?} is not a number"))?;
            let size_unit = |u: &str| -> Result<u64, SpecError> {
                Ok(match u {
                    "" | "byte" | "bytes" | "b" => 1,
                    "sector" | "sectors" | "512" => 512,
                    "kib" | "k" => 1024,
                    "4k" | "block" => 4096,
                    other => return Err(format!("{entry:?}: unknown size unit {other:?} (byte, sector, kib, 4k)").into()),
                })
            };
            match key {
                "time" => {
                    let u = match unit {
                        "s" => TimeUnit::Seconds,
                        "ms" => TimeUnit::Millis,
                        "" | "us" => TimeUnit::Micros,
                        "ns" => TimeUnit::Nanos,
                        other => return Err(format!("{entry:?}: unknown time unit {other:?} (s, ms, us, ns)").into()),
                    };
                    time = Some((col, u));
                }
                "offset" => offset = Some((col, size_unit(unit)?)),
                "size" => size = Some((col, size_unit(unit)?)),
                "op" => {
                    let (r, w) = unit.split_once('/').ok_or_else(|| format!("{entry:?}: expected op=COLUMN:READ/WRITE"))?;
                    op = Some((col, r.to_string(), w.to_string()));
                }
                "volume" => volume = Some(col),
                other => return Err(format!("unknown column name {other:?} (time, offset, size, op, volume)").into()),
            }
        }
        let need = |name: &str| format!("the column mapping has no {name}");
        Ok(Delimited {
            delimiter,
            time: time.ok_or_else(|| need("time"))?,
            offset: offset.ok_or_else(|| need("offset"))?,
            size: size.ok_or_else(|| need("size"))?,
            op: op.ok_or_else(|| need("op"))?,
            volume,
            header,
            volumes: HashMap::new(),
        })
    }

    /// One line holding `r` in this mapping's columns, units and separator (other columns
    /// `-`; no header): what [`crate::fixture`] writes. Panics if an offset or size is not a
    /// whole number of its column's unit, which no line of this mapping could say.
    pub fn render(&self, r: &Record) -> String {
        let (tcol, tunit) = self.time;
        let mut cols: Vec<Option<String>> = Vec::new();
        let mut put = |col: usize, value: String| {
            if cols.len() <= col {
                cols.resize(col + 1, None);
            }
            cols[col] = Some(value);
        };
        put(
            tcol,
            match tunit {
                TimeUnit::Seconds => format!("{}.{:06}", r.time_us / 1_000_000, r.time_us % 1_000_000),
                TimeUnit::Millis => format!("{}.{:03}", r.time_us / 1000, r.time_us % 1000),
                TimeUnit::Micros => r.time_us.to_string(),
                TimeUnit::Nanos => (r.time_us * 1000).to_string(),
            },
        );
        for ((col, unit), bytes, name) in [(self.offset, r.offset_bytes, "offset"), (self.size, r.len_bytes, "size")] {
            assert!(bytes % unit == 0, "{name} {bytes} B is not a whole number of {unit}-byte units");
            put(col, (bytes / unit).to_string());
        }
        put(self.op.0, if r.op == Op::Write { self.op.2.clone() } else { self.op.1.clone() });
        if let Some(col) = self.volume {
            put(col, r.volume.to_string());
        }
        let separator = self.delimiter.map_or(" ".to_string(), String::from);
        cols.into_iter().map(|c| c.unwrap_or_else(|| "-".into())).collect::<Vec<_>>().join(&separator)
    }
}

impl LineFormat for Delimited {
    fn parse(&mut self, line: &str) -> Result<Option<Record>, FieldError> {
        if self.header {
            self.header = false;
            return Ok(None);
        }
        let cols: Vec<&str> = match self.delimiter {
            Some(d) => line.split(d).collect(),
            None => line.split_ascii_whitespace().collect(),
        };
        let col = |i: usize, name: &'static str| cols.get(i).copied().ok_or_else(|| FieldError::new(name, line, format!("the line has no column {i}")));
        let (tcol, tunit) = self.time;
        let t = col(tcol, "time")?;
        let time_us = match tunit {
            TimeUnit::Seconds => parse_scaled("time", t, 6)?,
            TimeUnit::Millis => parse_scaled("time", t, 3)?,
            TimeUnit::Micros => parse_scaled("time", t, 0)?,
            TimeUnit::Nanos => parse_scaled("time", t, 0)? / 1000,
        };
        let scaled = |(c, unit): (usize, u64), name: &'static str| -> Result<u64, FieldError> {
            let s = col(c, name)?;
            parse_scaled(name, s, 0)?.checked_mul(unit).ok_or_else(|| FieldError::new(name, s, "too large"))
        };
        let offset_bytes = scaled(self.offset, "offset")?;
        let len_bytes = scaled(self.size, "size")?;
        let o = col(self.op.0, "op")?.trim();
        let op = if o == self.op.1 {
            Op::Read
        } else if o == self.op.2 {
            Op::Write
        } else {
            return Err(FieldError::new("op", o, format!("expected {:?} (read) or {:?} (write)", self.op.1, self.op.2)));
        };
        let volume = match self.volume {
            None => 0,
            Some(c) => {
                let v = col(c, "volume")?.trim();
                match v.parse::<u32>() {
                    Ok(n) => n,
                    Err(_) => {
                        let next = self.volumes.len() as u32;
                        *self.volumes.entry(v.to_string()).or_insert(next)
                    }
                }
            }
        };
        Ok(Some(Record { time_us, volume, offset_bytes, len_bytes, op }))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_column_mapped_twice_is_refused() {
        assert!(Delimited::parse("time=0:ms offset=1:sector size=2:sector op=3:R/W", Some(','), false).is_ok());
        let e = Delimited::parse("time=0:ms offset=1:sector size=2:sector op=3:R/W offset=4", Some(','), false).unwrap_err();
        assert!(e.to_string().contains("offset column is mapped twice"), "{e}");
    }
}
