//! The management requests that edit settings files: `enable`, `disable`, `enable_all` and
//! `disable_all` (the edits themselves are `crate::manage`'s).

use std::path::Path;

use hookd_protocol::{ErrorCode, ProtocolError, RequestId, ServerMessage};

use crate::convert;
use crate::manage::{ManageError, Manager, Outcome};
use crate::registries::Registries;

/// One of the edit requests.
pub(crate) enum EditRequest {
    /// `enable`.
    Enable(hookd_protocol::EnableRequest),
    /// `disable`.
    Disable(hookd_protocol::DisableRequest),
    /// `enable_all`.
    EnableAll(hookd_protocol::EnableAllRequest),
    /// `disable_all`.
    DisableAll(hookd_protocol::DisableAllRequest),
}

/// Carries out an edit request and answers it with `edited`, or with `edit_failed` when no
/// file could be edited.
pub(crate) async fn answer(registries: &Registries, request: EditRequest) -> ServerMessage {
    let (id, outcome) = match request {
        EditRequest::Enable(request) => {
            let manager = Manager::new(registries, Path::new(&request.cwd));
            (request.id, manager.enable(&request.name).await)
        }
        EditRequest::Disable(request) => {
            let manager = Manager::new(registries, Path::new(&request.cwd));
            (
                request.id,
                manager.disable(&request.name, request.scope).await,
            )
        }
        EditRequest::EnableAll(request) => {
            let manager = Manager::new(registries, Path::new(&request.cwd));
            (request.id, manager.enable_all().await)
        }
        EditRequest::DisableAll(request) => {
            let manager = Manager::new(registries, Path::new(&request.cwd));
            (request.id, manager.disable_all(request.scope).await)
        }
    };
    edited(id, outcome)
}

/// The answer to an edit: `edited`, or `edit_failed`.
fn edited(id: RequestId, outcome: Result<Outcome, ManageError>) -> ServerMessage {
    match outcome {
        Ok(outcome) => {
            tracing::info!("{}", outcome.message);
            convert::edited(id, outcome)
        }
        Err(err) => ProtocolError::new(ErrorCode::EditFailed, err.to_string())
            .with_id(Some(id))
            .to_server_message(),
    }
}
