//! `nltk.word_tokenize`, which WebArena's string evaluator uses for a single
//! one-character `must_include` item: Punkt sentences ([`punkt`]), then the
//! Treebank word rules on each ([`treebank`]).
//!
//! Punkt needs NLTK's trained English model, which skillshift does not ship;
//! [`WordTokenizer::from_environment`] finds it where NLTK does (`NLTK_DATA`,
//! then NLTK's default directories), under `tokenizers/punkt_tab/english/`.

pub mod punkt;
pub mod treebank;

use std::path::{Path, PathBuf};
use std::sync::OnceLock;

pub use punkt::{ModelError, PunktModel};

pub use crate::text::py_isspace;

/// Why no tokenizer could be had from the environment.
#[derive(Debug, thiserror::Error)]
pub enum TokenizerError {
    /// No directory searched holds the model; `looked` lists them in the order searched.
    #[error(
        "NLTK's punkt_tab English model is not installed (looked in {}): run `bash scripts/install-deps.sh`, or set \
         SKILLSHIFT_NLTK_DATA or NLTK_DATA to a directory holding tokenizers/punkt_tab/english",
        listed(.looked)
    )]
    NotInstalled { looked: Vec<PathBuf> },
    /// The model was found but does not read.
    #[error(transparent)]
    Model(ModelError),
}

/// `a, b, c`: the directories searched, for a message.
fn listed(dirs: &[PathBuf]) -> String {
    dirs.iter().map(|d| d.display().to_string()).collect::<Vec<_>>().join(", ")
}

/// `nltk.word_tokenize(text)` with a loaded English Punkt model.
#[derive(Debug, Clone)]
pub struct WordTokenizer {
    model: PunktModel,
}

impl WordTokenizer {
    pub fn new(model: PunktModel) -> Self {
        WordTokenizer { model }
    }

    /// Reads the model from an NLTK data directory (the one holding `tokenizers/`).
    pub fn from_nltk_data(dir: &Path) -> Result<Self, ModelError> {
        Ok(Self::new(PunktModel::load(&dir.join("tokenizers/punkt_tab/english"))?))
    }

    /// The model found where NLTK looks for it, loaded once per process (and so its error, which
    /// every caller shares); `Err` says where it looked.
    pub fn from_environment() -> Result<&'static WordTokenizer, &'static TokenizerError> {
        static SHARED: OnceLock<Result<WordTokenizer, TokenizerError>> = OnceLock::new();
        SHARED
            .get_or_init(|| {
                let dirs = nltk_data_dirs();
                for dir in &dirs {
                    if dir.join("tokenizers/punkt_tab/english/ortho_context.tab").is_file() {
                        return Self::from_nltk_data(dir).map_err(TokenizerError::Model);
                    }
                }
                Err(TokenizerError::NotInstalled { looked: dirs })
            })
            .as_ref()
    }

    /// The sentences of `text` (`nltk.sent_tokenize`).
    pub fn sentences(&self, text: &str) -> Vec<String> {
        self.model.sentences(text)
    }

    /// The word tokens of `text` (`nltk.word_tokenize`).
    pub fn tokens(&self, text: &str) -> Vec<String> {
        self.sentences(text).iter().flat_map(|s| treebank::tokenize(s)).collect()
    }
}

/// Where the model is looked for: `SKILLSHIFT_NLTK_DATA`, then NLTK's own search path: `NLTK_DATA`
/// (`:`-separated), `~/nltk_data`, then the system directories (`scripts/install-deps.sh` installs it
/// under `/usr/local/share/nltk_data`).
fn nltk_data_dirs() -> Vec<PathBuf> {
    let split = |var: &str| -> Vec<PathBuf> {
        std::env::var_os(var)
            .map(|v| std::env::split_paths(&v).filter(|p| !p.as_os_str().is_empty()).collect())
            .unwrap_or_default()
    };
    let mut dirs = split("SKILLSHIFT_NLTK_DATA");
    dirs.extend(split("NLTK_DATA"));
    if let Some(home) = std::env::var_os("HOME") {
        dirs.push(PathBuf::from(home).join("nltk_data"));
    }
    for d in ["/usr/share/nltk_data", "/usr/local/share/nltk_data", "/usr/lib/nltk_data", "/usr/local/lib/nltk_data"] {
        dirs.push(PathBuf::from(d));
    }
    dirs
}
