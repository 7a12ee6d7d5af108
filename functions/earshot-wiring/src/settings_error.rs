//! Why a gateway refuses to start: one error type and one message shape for every refused setting,
//! whether clap refused its value, a rule across settings refused the combination, or the AWS part it
//! names could not be reached.
//!
//! Every message reads `SETTING: why`, where SETTING is what the operator set, written as they can
//! find it: the variable with its flag (`EARSHOT_MAX_ANSWER_CHARS (--max-answer-chars)`), the flag
//! alone where it has no variable (`--body-timeout`), or the settings a rule weighs together. The
//! Lambda's failed init, `earshot serve`'s exit and the tests all read the same line. The name comes
//! from clap's own table of flags and variables ([`crate::settings::variable_of`]), so a message cannot
//! name a variable that the flag does not read.

use std::fmt;

/// A setting refused at start, and why.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct SettingsError {
    /// What the operator set: `EARSHOT_X (--x)`, `--x`, or the settings a rule weighs together.
    pub setting: String,
    /// Why it is refused, and where it helps, what would be taken.
    pub message: String,
}

impl SettingsError {
    /// The setting whose flag is `--{flag}`, named with its variable where it has one.
    pub fn of(flag: &str, message: impl Into<String>) -> Self {
        let setting = match crate::settings::variable_of(flag) {
            Some(variable) => format!("{variable} (--{flag})"),
            None => format!("--{flag}"),
        };
        SettingsError { setting, message: message.into() }
    }

    /// Settings refused together, or a variable no flag reads, named as given.
    pub fn named(setting: impl Into<String>, message: impl Into<String>) -> Self {
        SettingsError { setting: setting.into(), message: message.into() }
    }

    /// A check whose own words carry no setting, put under the setting it checked.
    pub fn wrap<E: fmt::Display>(flag: &str) -> impl FnOnce(E) -> SettingsError {
        let flag = flag.to_string();
        move |e| SettingsError::of(&flag, e.to_string())
    }
}

impl fmt::Display for SettingsError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}: {}", self.setting, self.message)
    }
}

impl std::error::Error for SettingsError {}

impl From<SettingsError> for String {
    fn from(e: SettingsError) -> String {
        e.to_string()
    }
}
