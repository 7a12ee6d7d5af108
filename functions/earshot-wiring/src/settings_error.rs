//! Why a gateway refuses to start: one error type and one message shape for every refused setting,
//! whether clap refused its value, a rule across settings refused the combination, or the AWS part it
//! names could not be reached.
//!
//! Every message reads `SETTING: why`, where SETTING is what the operator set, written as they can
//! find it: the variable with its flag (`EARSHOT_MAX_ANSWER_CHARS (--max-answer-chars)`), the flag
//! alone where it has no variable (`--body-timeout`), or the settings a rule weighs together. The
//! Lambda's failed init, `earshot serve`'s exit and the tests all carry the same line. The name comes
//! from clap's own table of flags and variables ([`SettingsError::of_arg`]), so a message cannot name a
//! variable that the flag does not read.

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
    /// The setting whose flag is `--{flag}` among `command`'s arguments, named with its variable where
    /// it has one. ([`SettingsError::of`] names the gateway's settings; `earshot serve`'s own name theirs.)
    pub fn of_arg(command: &clap::Command, flag: &str, message: impl Into<String>) -> Self {
        let setting = match variable_of(command, flag) {
            Some(variable) => format!("{variable} (--{flag})"),
            None => format!("--{flag}"),
        };
        SettingsError { setting, message: message.into() }
    }

    /// Settings refused together, or a variable no flag reads, named as given.
    pub fn named(setting: impl Into<String>, message: impl Into<String>) -> Self {
        SettingsError { setting: setting.into(), message: message.into() }
    }
}

/// The variable clap reads for `--{flag}` among `command`'s arguments (`None`: a flag with no variable,
/// or no such flag).
pub fn variable_of(command: &clap::Command, flag: &str) -> Option<String> {
    command.get_arguments().find(|a| a.get_long() == Some(flag)).and_then(|a| a.get_env()).map(|v| v.to_string_lossy().into_owned())
}

/// `value` when it lies in `min..=max`; otherwise `rule`, with the value.
pub fn within(value: u64, min: u64, max: u64, rule: &str) -> Result<u64, String> {
    if (min..=max).contains(&value) {
        Ok(value)
    } else {
        Err(format!("{rule}, not {value}"))
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
