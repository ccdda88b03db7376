//! A subscription to registry changes.

use hookd_protocol::{RegistryChangedMessage, RequestId, ServerMessage};
use tokio::sync::mpsc;

use crate::Client;
use crate::error::{ClientError, Result};

/// The `registry_changed` frames of one subscription, in the order the daemon sent them.
///
/// Dropping it cancels the subscription on the daemon (best effort).
#[derive(Debug)]
pub struct Subscription {
    client: Client,
    id: RequestId,
    answers: mpsc::Receiver<ServerMessage>,
    finished: bool,
}

impl Subscription {
    pub(crate) fn new(
        client: Client,
        id: RequestId,
        answers: mpsc::Receiver<ServerMessage>,
    ) -> Subscription {
        Subscription {
            client,
            id,
            answers,
            finished: false,
        }
    }

    /// Waits for the daemon's `subscribed` acknowledgement.
    pub(crate) async fn acknowledged(mut self) -> Result<Subscription> {
        match self.answers.recv().await {
            Some(ServerMessage::Subscribed(_)) => Ok(self),
            Some(other) => {
                self.finished = true;
                Err(crate::unexpected_or_server_error("subscribe", other))
            }
            None => {
                self.finished = true;
                Err(ClientError::Disconnected)
            }
        }
    }

    /// The subscription's request id, for [`Client::cancel`].
    pub fn id(&self) -> &RequestId {
        &self.id
    }

    /// The next change; `None` once the subscription has ended (the connection was lost or
    /// the daemon stopped).
    pub async fn recv(&mut self) -> Option<Result<RegistryChangedMessage>> {
        if self.finished {
            return None;
        }
        match self.answers.recv().await {
            Some(ServerMessage::RegistryChanged(change)) => Some(Ok(change)),
            Some(other) => {
                self.finished = true;
                Some(Err(crate::unexpected_or_server_error("subscribe", other)))
            }
            None => {
                self.finished = true;
                None
            }
        }
    }
}

impl Drop for Subscription {
    fn drop(&mut self) {
        if !self.finished {
            self.client.abandon(&self.id, true);
        }
    }
}
