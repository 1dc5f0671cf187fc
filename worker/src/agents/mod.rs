//! The agents the run loop can drive (see [`crate::agent::Agent`]).
pub mod cmd;
pub mod llm;
pub mod prompt;
pub mod reference;
pub mod scripted_llm;
