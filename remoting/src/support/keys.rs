//! Configuration keys declared once. A section of a server's configuration (the
//! broker's own keys, POP, gRPC, the store, the name server, ...) declares one
//! [`Table`]: for each key its RocketMQ name, a one-line description, how a value is
//! applied to the section's struct and how the field is printed back. Everything else
//! comes from that table:
//!
//! * applying a `.properties` file or `-o key=value` ([`Table::apply`]);
//! * `-p`, GET_BROKER_CONFIG and the other ways the effective settings are printed
//!   ([`Table::print`]), which parse back to the same settings;
//! * the error for an unknown key, with the nearest known key as a suggestion
//!   ([`unknown_key`]);
//! * the key reference in the docs ([`Table::markdown`]), whose default column is the
//!   printed value of the section's `Default`.
//!
//! A table holds its own keys and the tables of the sections nested in its struct
//! ([`Within`]), so the broker's table reaches the store's keys through its `store`
//! field. Most keys are one [`key!`](crate::config_key) line naming the field and a
//! [`Codec`]; keys with a rule of their own give the two functions by hand.

use std::fmt::Display;
use std::path::PathBuf;
use std::str::FromStr;
use std::time::Duration;

pub use super::did_you_mean::{did_you_mean, unknown_key};

/// Sets a key's field from its text; `Err` is the reason the value is refused.
pub type ApplyFn<C> = fn(&mut C, &str) -> Result<(), String>;
/// The key's field as text that [`ApplyFn`] reads back.
pub type PrintFn<C> = fn(&C) -> String;

/// One key of a section.
pub struct Key<C: 'static> {
    /// The RocketMQ name, as in `broker.conf`.
    pub name: &'static str,
    /// One line for the key reference.
    pub doc: &'static str,
    pub apply: ApplyFn<C>,
    pub print: PrintFn<C>,
    /// Whether the key is printed and what it is.
    pub kind: Kind,
    /// The default as the key reference states it, where the printed `Default`
    /// depends on the host (a host name, `$HOME`, ...).
    pub default_text: Option<&'static str>,
    /// Whether the key may change while the server runs ([`Key::at_run_time`]).
    pub run_time: bool,
    /// Whether the key is among the few a server prints for a quick look
    /// ([`Key::important`]).
    pub important: bool,
}

impl<C> Key<C> {
    /// A key with its own apply and print rules.
    pub const fn new(
        name: &'static str,
        doc: &'static str,
        apply: ApplyFn<C>,
        print: PrintFn<C>,
    ) -> Self {
        Key {
            name,
            doc,
            apply,
            print,
            kind: Kind::Plain,
            default_text: None,
            run_time: false,
            important: false,
        }
    }

    /// Another name for `of`, applied by `apply`.
    pub const fn alias(name: &'static str, of: &'static str, apply: ApplyFn<C>) -> Self {
        Key {
            name,
            doc: "",
            apply,
            print: |_| String::new(),
            kind: Kind::Alias(of),
            default_text: None,
            run_time: false,
            important: false,
        }
    }

    /// A RocketMQ key accepted for compatibility that configures nothing here.
    pub const fn ignored(name: &'static str) -> Self {
        Key {
            name,
            doc: "",
            apply: |_, _| Ok(()),
            print: |_| String::new(),
            kind: Kind::Ignored,
            default_text: None,
            run_time: false,
            important: false,
        }
    }

    /// The same key with the default the reference states.
    pub const fn default_text(mut self, text: &'static str) -> Self {
        self.default_text = Some(text);
        self
    }

    /// The same key, changeable while the server runs; the reference says so.
    pub const fn at_run_time(mut self) -> Self {
        self.run_time = true;
        self
    }

    /// The same key, among those printed for a quick look (`mqbroker -m`, as
    /// RocketMQ's important fields).
    pub const fn important(mut self) -> Self {
        self.important = true;
        self
    }
}

/// What a key is.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Kind {
    /// Read and printed.
    Plain,
    /// Another name for the key named: read, never printed.
    Alias(&'static str),
    /// Accepted for compatibility with RocketMQ's files, with no effect; not printed.
    Ignored,
}

/// How a field's type is read from and written to text.
pub trait Codec<T> {
    fn parse(&self, text: &str) -> Result<T, String>;
    fn print(&self, value: &T) -> String;
}

/// Numbers and other `FromStr + Display` values, surrounding blanks ignored.
pub struct Num;
/// `true` or `false`, any case; stricter than Java's `Boolean.parseBoolean`, which
/// reads a typo as false.
pub struct Flag;
/// Text, surrounding blanks removed.
pub struct Text;
/// Text exactly as written.
pub struct RawText;
/// Text where empty means unset.
pub struct OptText;
/// A path.
pub struct Path;
/// A duration in milliseconds.
pub struct Millis;
/// A duration in seconds.
pub struct Secs;
/// A number of at least the one given: `AtLeast(1usize)`.
pub struct AtLeast<T>(pub T);

/// Reads a number, naming the value when it is not one.
pub fn num<T: FromStr>(text: &str) -> Result<T, String>
where
    T::Err: Display,
{
    text.trim()
        .parse()
        .map_err(|e: T::Err| format!("cannot parse {text:?} ({e})"))
}

/// Reads a number of at least `min`.
pub fn at_least<T: FromStr + PartialOrd + Display>(text: &str, min: T) -> Result<T, String>
where
    T::Err: Display,
{
    let n = num(text)?;
    if n < min {
        return Err(format!("expected at least {min}, got {text:?}"));
    }
    Ok(n)
}

/// Reads `true` or `false`.
pub fn flag(text: &str) -> Result<bool, String> {
    match text.trim().to_ascii_lowercase().as_str() {
        "true" => Ok(true),
        "false" => Ok(false),
        _ => Err(format!("expected true or false, got {text:?}")),
    }
}

impl<T: FromStr + Display> Codec<T> for Num
where
    T::Err: Display,
{
    fn parse(&self, text: &str) -> Result<T, String> {
        num(text)
    }
    fn print(&self, value: &T) -> String {
        value.to_string()
    }
}

impl<T: FromStr + PartialOrd + Display + Copy> Codec<T> for AtLeast<T>
where
    T::Err: Display,
{
    fn parse(&self, text: &str) -> Result<T, String> {
        at_least(text, self.0)
    }
    fn print(&self, value: &T) -> String {
        value.to_string()
    }
}

impl Codec<bool> for Flag {
    fn parse(&self, text: &str) -> Result<bool, String> {
        flag(text)
    }
    fn print(&self, value: &bool) -> String {
        value.to_string()
    }
}

impl Codec<String> for Text {
    fn parse(&self, text: &str) -> Result<String, String> {
        Ok(text.trim().to_owned())
    }
    fn print(&self, value: &String) -> String {
        value.clone()
    }
}

impl Codec<String> for RawText {
    fn parse(&self, text: &str) -> Result<String, String> {
        Ok(text.to_owned())
    }
    fn print(&self, value: &String) -> String {
        value.clone()
    }
}

impl Codec<Option<String>> for OptText {
    fn parse(&self, text: &str) -> Result<Option<String>, String> {
        Ok(Some(text.trim().to_owned()).filter(|s| !s.is_empty()))
    }
    fn print(&self, value: &Option<String>) -> String {
        value.clone().unwrap_or_default()
    }
}

impl Codec<PathBuf> for Path {
    fn parse(&self, text: &str) -> Result<PathBuf, String> {
        Ok(PathBuf::from(text.trim()))
    }
    fn print(&self, value: &PathBuf) -> String {
        value.display().to_string()
    }
}

impl Codec<Duration> for Millis {
    fn parse(&self, text: &str) -> Result<Duration, String> {
        num(text).map(Duration::from_millis)
    }
    fn print(&self, value: &Duration) -> String {
        value.as_millis().to_string()
    }
}

impl Codec<Duration> for Secs {
    fn parse(&self, text: &str) -> Result<Duration, String> {
        num(text).map(Duration::from_secs)
    }
    fn print(&self, value: &Duration) -> String {
        value.as_secs().to_string()
    }
}

/// `config_key!("name", field.path: Codec, "doc")`: a [`Key`] that reads its value
/// into `field.path` with the [`Codec`] and prints it back with the same codec.
///
/// Options may follow the doc, comma separated:
/// * `default = "text"` states the default for the key reference, where the `Default`
///   depends on the host;
/// * `at_run_time`: the key may change while the server runs; the reference says so;
/// * `important`: among the keys printed for a quick look ([`Key::important`]).
#[macro_export]
macro_rules! config_key {
    (@with $key:expr;) => { $key };
    (@with $key:expr; default = $default:literal $(, $($rest:tt)*)?) => {
        $crate::config_key!(@with $crate::support::keys::Key {
            default_text: Some($default),
            ..$key
        }; $($($rest)*)?)
    };
    (@with $key:expr; at_run_time $(, $($rest:tt)*)?) => {
        $crate::config_key!(@with $crate::support::keys::Key {
            run_time: true,
            ..$key
        }; $($($rest)*)?)
    };
    (@with $key:expr; important $(, $($rest:tt)*)?) => {
        $crate::config_key!(@with $crate::support::keys::Key {
            important: true,
            ..$key
        }; $($($rest)*)?)
    };
    ($name:literal, $($field:ident).+ : $codec:expr, $doc:literal, $($option:tt)+) => {
        $crate::config_key!(
            @with $crate::config_key!($name, $($field).+ : $codec, $doc); $($option)+
        )
    };
    ($name:literal, $($field:ident).+ : $codec:expr, $doc:literal) => {
        $crate::support::keys::Key {
            name: $name,
            doc: $doc,
            apply: |c, v| {
                c.$($field).+ = $crate::support::keys::Codec::parse(&$codec, v)?;
                Ok(())
            },
            print: |c| $crate::support::keys::Codec::print(&$codec, &c.$($field).+),
            kind: $crate::support::keys::Kind::Plain,
            default_text: None,
            run_time: false,
            important: false,
        }
    };
}

/// `config_within!(Parent, field, TABLE)`: the keys of `TABLE` (a `Table` of the
/// field's type) as keys of `Parent`.
#[macro_export]
macro_rules! config_within {
    ($parent:ty, $($field:ident).+, $table:expr) => {
        &$crate::support::keys::Within::<$parent, _> {
            table: &$table,
            get: |c| &c.$($field).+,
            get_mut: |c| &mut c.$($field).+,
        }
    };
}

/// One key as the key reference lists it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct KeyDoc {
    pub name: &'static str,
    pub doc: &'static str,
    pub kind: Kind,
    pub default_text: Option<&'static str>,
    pub run_time: bool,
    pub important: bool,
}

/// Part of a table: its own keys or a nested section's.
pub trait Part<C>: Sync {
    /// `None` when `key` is not one of this part's keys.
    fn apply(&self, config: &mut C, key: &str, value: &str) -> Option<Result<(), String>>;
    fn print(&self, config: &C, out: &mut Vec<(&'static str, String)>);
    fn describe(&self, out: &mut Vec<KeyDoc>);
    /// The keys of this part that the section's own update request changes while the
    /// server runs: those [`Part::describe`] marks. A part that is another server's
    /// section (a name server's embedded controller) overrides this to name none, so
    /// that only that server's own request changes them.
    fn run_time_names(&self, out: &mut Vec<&'static str>) {
        let mut docs = Vec::new();
        self.describe(&mut docs);
        out.extend(docs.into_iter().filter(|k| k.run_time).map(|k| k.name));
    }
}

/// A section's keys: its own, then those of the sections nested in it.
pub struct Table<C: 'static> {
    pub keys: &'static [Key<C>],
    pub nested: &'static [&'static dyn Part<C>],
}

/// A nested section's table as part of its parent's.
pub struct Within<P: 'static, C: 'static> {
    pub table: &'static Table<C>,
    pub get: fn(&P) -> &C,
    pub get_mut: fn(&mut P) -> &mut C,
}

impl<C> Part<C> for Table<C> {
    fn apply(&self, config: &mut C, key: &str, value: &str) -> Option<Result<(), String>> {
        if let Some(k) = self.keys.iter().find(|k| k.name == key) {
            return Some((k.apply)(config, value));
        }
        self.nested
            .iter()
            .find_map(|part| part.apply(config, key, value))
    }

    fn print(&self, config: &C, out: &mut Vec<(&'static str, String)>) {
        for k in self.keys.iter().filter(|k| k.kind == Kind::Plain) {
            out.push((k.name, (k.print)(config)));
        }
        for part in self.nested {
            part.print(config, out);
        }
    }

    fn describe(&self, out: &mut Vec<KeyDoc>) {
        out.extend(self.keys.iter().map(|k| KeyDoc {
            name: k.name,
            doc: k.doc,
            kind: k.kind,
            default_text: k.default_text,
            run_time: k.run_time,
            important: k.important,
        }));
        for part in self.nested {
            part.describe(out);
        }
    }

    fn run_time_names(&self, out: &mut Vec<&'static str>) {
        out.extend(self.keys.iter().filter(|k| k.run_time).map(|k| k.name));
        for part in self.nested {
            part.run_time_names(out);
        }
    }
}

impl<P, C> Part<P> for Within<P, C> {
    fn apply(&self, config: &mut P, key: &str, value: &str) -> Option<Result<(), String>> {
        Part::apply(self.table, (self.get_mut)(config), key, value)
    }
    fn print(&self, config: &P, out: &mut Vec<(&'static str, String)>) {
        Part::print(self.table, (self.get)(config), out)
    }
    fn describe(&self, out: &mut Vec<KeyDoc>) {
        Part::describe(self.table, out)
    }
    fn run_time_names(&self, out: &mut Vec<&'static str>) {
        Part::run_time_names(self.table, out)
    }
}

impl<C> Table<C> {
    /// Applies one key. `None` when no key of the table has that name;
    /// `Some(Err(reason))` when the value is refused.
    pub fn apply(&self, config: &mut C, key: &str, value: &str) -> Option<Result<(), String>> {
        Part::apply(self, config, key, value)
    }

    /// Applies one key; an unknown key is an error naming the nearest known one.
    pub fn apply_known(&self, config: &mut C, key: &str, value: &str) -> Result<(), String> {
        match self.apply(config, key, value) {
            Some(result) => result,
            None => Err(unknown_key(key, self.names())),
        }
    }

    /// Every key (aliases left out) with its value in `config`, in table order.
    pub fn print(&self, config: &C) -> Vec<(String, String)> {
        self.values(config)
            .into_iter()
            .map(|(k, v)| (k.to_owned(), v))
            .collect()
    }

    /// [`Self::print`] with the names as declared.
    pub fn values(&self, config: &C) -> Vec<(&'static str, String)> {
        let mut out = Vec::new();
        Part::print(self, config, &mut out);
        out
    }

    /// Every key the table accepts, aliases included.
    pub fn describe(&self) -> Vec<KeyDoc> {
        let mut out = Vec::new();
        Part::describe(self, &mut out);
        out
    }

    /// The names of [`Self::describe`].
    pub fn names(&self) -> Vec<&'static str> {
        self.describe().into_iter().map(|k| k.name).collect()
    }

    /// The names of the keys the server's update request changes while it runs, in
    /// table order: the keys marked [`Key::at_run_time`], its nested sections' included,
    /// except those of a part that is another server's section ([`Part::run_time_names`]).
    pub fn run_time_names(&self) -> Vec<&'static str> {
        let mut out = Vec::new();
        Part::run_time_names(self, &mut out);
        out
    }

    /// The names of the keys printed for a quick look ([`Key::important`]), in table
    /// order.
    pub fn important_names(&self) -> Vec<&'static str> {
        self.describe()
            .into_iter()
            .filter(|k| k.important)
            .map(|k| k.name)
            .collect()
    }

    /// The key reference: a Markdown table of every key, its default (as `defaults`
    /// prints it) and its description.
    pub fn markdown(&self, defaults: &C) -> String {
        let printed = self.values(defaults);
        let mut out = String::from("| key | default | meaning |\n|---|---|---|\n");
        for k in self.describe() {
            let default = match (k.kind, k.default_text) {
                (Kind::Alias(of), _) => format!("same as `{of}`"),
                (Kind::Ignored, _) => String::new(),
                (Kind::Plain, Some(text)) => text.to_owned(),
                (Kind::Plain, None) => printed
                    .iter()
                    .find(|(name, _)| *name == k.name)
                    .map(|(_, v)| {
                        if v.is_empty() {
                            "(empty)".to_owned()
                        } else {
                            format!("`{}`", v.replace('|', "\\|"))
                        }
                    })
                    .unwrap_or_default(),
            };
            let doc = match k.kind {
                Kind::Alias(of) => format!("another name for `{of}`"),
                Kind::Ignored => "accepted for RocketMQ's files; no effect in Vostok".to_owned(),
                Kind::Plain if k.run_time => {
                    format!("{}; changes at run time", k.doc.replace('|', "\\|"))
                }
                Kind::Plain => k.doc.replace('|', "\\|"),
            };
            out.push_str(&format!("| `{}` | {default} | {doc} |\n", k.name));
        }
        out
    }
}

/// Checks what each section's tests check: `config` prints every key the table
/// reads (aliases and ignored keys aside), each once, and nothing else, and the
/// printed values, read back into `fresh`, print the same.
pub fn check_printed_keys<C>(table: &Table<C>, config: &C, mut fresh: C) -> Result<(), String> {
    let printed = table.values(config);
    let names: Vec<&str> = printed.iter().map(|(k, _)| *k).collect();
    let readable: Vec<&str> = table
        .describe()
        .into_iter()
        .filter(|k| k.kind == Kind::Plain)
        .map(|k| k.name)
        .collect();
    if names != readable {
        return Err(format!(
            "printed keys differ from the keys read:\n printed {names:?}\n read {readable:?}"
        ));
    }
    let mut unique = names.clone();
    unique.sort_unstable();
    unique.dedup();
    if unique.len() != names.len() {
        return Err(format!("a key is printed twice: {names:?}"));
    }
    for (k, v) in &printed {
        table
            .apply_known(&mut fresh, k, v)
            .map_err(|e| format!("{k}={v} does not read back: {e}"))?;
    }
    let again = table.values(&fresh);
    if again != printed {
        return Err(format!(
            "read back, the keys print differently:\n {printed:?}\n {again:?}"
        ));
    }
    Ok(())
}

/// A struct configured by a key table.
pub trait Section: Sized + 'static {
    fn table() -> &'static Table<Self>;

    /// Applies one key; `Ok(false)` when it is not one of the section's keys.
    fn set_key(&mut self, key: &str, value: &str) -> Result<bool, String> {
        match Self::table().apply(self, key, value) {
            Some(result) => result.map(|()| true),
            None => Ok(false),
        }
    }

    /// Every key with its value, in table order.
    fn key_values(&self) -> Vec<(String, String)> {
        Self::table().print(self)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[derive(Debug, Default, PartialEq)]
    struct Inner {
        size: usize,
    }

    #[derive(Debug, Default, PartialEq)]
    struct Outer {
        name: String,
        on: bool,
        every: Duration,
        inner: Inner,
    }

    static INNER: Table<Inner> = Table {
        keys: &[crate::config_key!("innerSize", size: Num, "a size", at_run_time, important)],
        nested: &[],
    };

    static OUTER: Table<Outer> = Table {
        keys: &[
            crate::config_key!("outerName", name: Text, "a name"),
            crate::config_key!("outerOn", on: Flag, "a switch"),
            crate::config_key!("outerEvery", every: Millis, "a period"),
            Key::alias("outerEnabled", "outerOn", |c: &mut Outer, v| {
                c.on = flag(v)?;
                Ok(())
            }),
        ],
        nested: &[crate::config_within!(Outer, inner, INNER)],
    };

    #[test]
    fn a_run_time_key_is_marked_on_its_line_and_in_the_reference() {
        assert_eq!(OUTER.run_time_names(), ["innerSize"]);
        assert_eq!(OUTER.important_names(), ["innerSize"]);
        let md = OUTER.markdown(&Outer::default());
        assert!(
            md.contains("| `innerSize` | `0` | a size; changes at run time |"),
            "{md}"
        );
        assert!(md.contains("| `outerOn` | `false` | a switch |"), "{md}");
    }

    /// Another server's section nested in a table: read and listed with it, changed
    /// at run time only through that server's own request.
    struct Foreign;

    impl Part<Outer> for Foreign {
        fn apply(&self, c: &mut Outer, key: &str, value: &str) -> Option<Result<(), String>> {
            INNER.apply(&mut c.inner, key, value)
        }
        fn print(&self, c: &Outer, out: &mut Vec<(&'static str, String)>) {
            out.extend(INNER.values(&c.inner));
        }
        fn describe(&self, out: &mut Vec<KeyDoc>) {
            out.extend(INNER.describe());
        }
        fn run_time_names(&self, _: &mut Vec<&'static str>) {}
    }

    static HOST: Table<Outer> = Table {
        keys: &[crate::config_key!("outerOn", on: Flag, "a switch", at_run_time)],
        nested: &[&Foreign],
    };

    #[test]
    fn another_servers_section_keeps_its_run_time_keys_to_itself() {
        assert_eq!(HOST.run_time_names(), ["outerOn"]);
        assert_eq!(INNER.run_time_names(), ["innerSize"]);
        let md = HOST.markdown(&Outer::default());
        assert!(
            md.contains("| `innerSize` | `0` | a size; changes at run time |"),
            "{md}"
        );
    }

    #[test]
    fn keys_apply_print_and_parse_back() {
        let mut c = Outer::default();
        OUTER.apply_known(&mut c, "outerName", " a ").unwrap();
        OUTER.apply_known(&mut c, "outerEnabled", "TRUE").unwrap();
        OUTER.apply_known(&mut c, "outerEvery", "1500").unwrap();
        OUTER.apply_known(&mut c, "innerSize", "7").unwrap();
        assert_eq!(c.name, "a");
        assert!(c.on);
        assert_eq!(c.every, Duration::from_millis(1500));
        assert_eq!(c.inner.size, 7);
        let printed = OUTER.print(&c);
        let names: Vec<&str> = printed.iter().map(|(k, _)| k.as_str()).collect();
        assert_eq!(names, ["outerName", "outerOn", "outerEvery", "innerSize"]);
        let mut back = Outer::default();
        for (k, v) in &printed {
            OUTER.apply_known(&mut back, k, v).unwrap();
        }
        assert_eq!(back, c);
        check_printed_keys(&OUTER, &c, Outer::default()).unwrap();
        let e = OUTER.apply_known(&mut c, "innerSize", "x").unwrap_err();
        assert!(e.contains("cannot parse \"x\""), "{e}");
        assert_eq!(at_least(" 3 ", 1u32), Ok(3));
        assert_eq!(
            AtLeast(1usize).parse("0"),
            Err("expected at least 1, got \"0\"".to_owned())
        );
        assert!(at_least::<i64>("x", 1)
            .unwrap_err()
            .contains("cannot parse"));
        let e = OUTER.apply_known(&mut c, "outerOn", "yes").unwrap_err();
        assert!(e.contains("expected true or false"), "{e}");
        let md = OUTER.markdown(&Outer::default());
        assert!(md.contains("| `outerEvery` | `0` | a period |"), "{md}");
        assert!(
            md.contains("| `outerEnabled` | same as `outerOn` |"),
            "{md}"
        );
    }

    #[test]
    fn an_unknown_key_in_a_table_names_the_nearest_one() {
        let e = OUTER
            .apply_known(&mut Outer::default(), "innersize", "1")
            .unwrap_err();
        assert_eq!(e, "unknown key 'innersize' (did you mean 'innerSize'?)");
    }
}
