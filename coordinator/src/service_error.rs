//! The one error of the coordinator's gRPC services and the one place it
//! becomes a `tonic::Status`.
//!
//! Every service (Worker and Control, the token check, LlmBudget) builds a
//! [`ServiceError`] and lets `?` turn it into a status through
//! `From<ServiceError> for Status`; nothing else builds a status. The engine's refusals ([`Refused`]), the budget's
//! ([`BudgetError`]) and malformed wire messages ([`WireError`]) convert into
//! it, so each kind of failure has exactly one code. The message a client
//! sees is the variant's text.

use std::time::Duration;

use skillshift_common::ids::SweepId;
use skillshift_proto::convert::WireError;
use tonic::Status;

use crate::engine::Refused;
use crate::llm_budget::BudgetError;

/// What went wrong serving one call; its variant decides the status code.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum ServiceError {
    /// Malformed, or past a bound of its own (`invalid_argument`).
    #[error("{0}")]
    Invalid(String),
    /// The coordinator holds as much as it may (`resource_exhausted`).
    #[error("{0}")]
    Full(String),
    /// So many streams or sessions of one kind are open at once (`resource_exhausted`).
    #[error("{limit} {what} are open, the limit; try again later")]
    AtLimit { what: &'static str, limit: usize },
    /// The caller is not in the state the call needs: an unregistered worker,
    /// a permit it does not hold (`failed_precondition`).
    #[error("{0}")]
    Precondition(String),
    /// No sweep has this id (`not_found`).
    #[error("no sweep '{0}'")]
    NoSweep(SweepId),
    /// The engine is gone: the coordinator is shutting down (`unavailable`).
    #[error("the coordinator is shutting down")]
    ShuttingDown,
    /// An export cut short by shutdown, never a silently short one (`unavailable`).
    #[error("the coordinator is shutting down; export again")]
    ExportInterrupted,
    /// A session that did not say hello in time (`deadline_exceeded`).
    #[error("no hello within {} ms", .0.as_millis())]
    NoHello(Duration),
    /// Stored data that cannot be read back (`data_loss`).
    #[error("{0}")]
    DataLoss(String),
    /// A broken invariant of the coordinator itself (`internal`).
    #[error("{0}")]
    Internal(String),
    /// A call without the right bearer token (`unauthenticated`).
    #[error("{0}")]
    Unauthenticated(&'static str),
}

impl From<ServiceError> for Status {
    fn from(e: ServiceError) -> Status {
        let m = e.to_string();
        match e {
            ServiceError::Invalid(_) => Status::invalid_argument(m),
            ServiceError::Full(_) | ServiceError::AtLimit { .. } => Status::resource_exhausted(m),
            ServiceError::Precondition(_) => Status::failed_precondition(m),
            ServiceError::NoSweep(_) => Status::not_found(m),
            ServiceError::ShuttingDown | ServiceError::ExportInterrupted => Status::unavailable(m),
            ServiceError::NoHello(_) => Status::deadline_exceeded(m),
            ServiceError::DataLoss(_) => Status::data_loss(m),
            ServiceError::Internal(_) => Status::internal(m),
            ServiceError::Unauthenticated(_) => Status::unauthenticated(m),
        }
    }
}

impl From<Refused> for ServiceError {
    fn from(r: Refused) -> ServiceError {
        match r {
            Refused::Invalid(m) => ServiceError::Invalid(m),
            Refused::Full(m) => ServiceError::Full(m),
            Refused::NotRegistered(m) => ServiceError::Precondition(m),
        }
    }
}

impl From<BudgetError> for ServiceError {
    fn from(e: BudgetError) -> ServiceError {
        let m = e.to_string();
        match e {
            BudgetError::NotHeld(_) => ServiceError::Precondition(m),
            BudgetError::HolderFull | BudgetError::LedgerFull | BudgetError::TooManyEndpoints => ServiceError::Full(m),
            BudgetError::Poisoned => ServiceError::Internal(m),
        }
    }
}

impl From<WireError> for ServiceError {
    fn from(e: WireError) -> ServiceError {
        ServiceError::Invalid(e.to_string())
    }
}

impl From<Refused> for Status {
    fn from(r: Refused) -> Status {
        ServiceError::from(r).into()
    }
}

impl From<BudgetError> for Status {
    fn from(e: BudgetError) -> Status {
        ServiceError::from(e).into()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use tonic::Code;

    #[test]
    fn each_kind_has_one_code_and_its_text() {
        let cases = [
            (ServiceError::Invalid("bad".into()), Code::InvalidArgument, "bad"),
            (ServiceError::Full("full".into()), Code::ResourceExhausted, "full"),
            (
                ServiceError::AtLimit { what: "worker sessions", limit: 3 },
                Code::ResourceExhausted,
                "3 worker sessions are open, the limit; try again later",
            ),
            (ServiceError::Precondition("who".into()), Code::FailedPrecondition, "who"),
            (ServiceError::NoSweep("sw-1".into()), Code::NotFound, "no sweep 'sw-1'"),
            (ServiceError::ShuttingDown, Code::Unavailable, "the coordinator is shutting down"),
            (ServiceError::ExportInterrupted, Code::Unavailable, "the coordinator is shutting down; export again"),
            (ServiceError::NoHello(Duration::from_millis(1500)), Code::DeadlineExceeded, "no hello within 1500 ms"),
            (ServiceError::DataLoss("gone".into()), Code::DataLoss, "gone"),
            (ServiceError::Internal("oops".into()), Code::Internal, "oops"),
            (ServiceError::Unauthenticated("wrong token"), Code::Unauthenticated, "wrong token"),
        ];
        for (e, code, message) in cases {
            let s = Status::from(e);
            assert_eq!((s.code(), s.message()), (code, message));
        }
    }

    #[test]
    fn refusals_and_budget_errors_keep_their_codes() {
        assert_eq!(Status::from(Refused::Invalid("x".into())).code(), Code::InvalidArgument);
        assert_eq!(Status::from(Refused::Full("x".into())).code(), Code::ResourceExhausted);
        assert_eq!(Status::from(Refused::NotRegistered("x".into())).code(), Code::FailedPrecondition);
        assert_eq!(Status::from(BudgetError::NotHeld("p".into())).code(), Code::FailedPrecondition);
        assert_eq!(Status::from(BudgetError::HolderFull).code(), Code::ResourceExhausted);
        assert_eq!(Status::from(BudgetError::LedgerFull).code(), Code::ResourceExhausted);
        assert_eq!(Status::from(BudgetError::TooManyEndpoints).code(), Code::ResourceExhausted);
        assert_eq!(Status::from(BudgetError::Poisoned).code(), Code::Internal);
    }
}
