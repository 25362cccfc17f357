//! The editor's file system as pith's text files: when the client declares
//! `fs.readTextFile` / `fs.writeTextFile`, `read`, `edit` and `write` take and put text
//! with `fs/read_text_file` / `fs/write_text_file`, so unsaved buffers are what the agent
//! sees and changes. Each direction is used only when declared; the other stays on disk.

use std::io;
use std::path::Path;
use std::sync::{Arc, OnceLock};

use agent_client_protocol::v1::schema::{
    ErrorCode, FileSystemCapabilities, ReadTextFileRequest, SessionId, WriteTextFileRequest,
};
use agent_client_protocol::v1::ConnectionTo;
use agent_client_protocol::Client;
use async_trait::async_trait;
use pith_tools::TextFiles;

/// Which of the client's file methods it declared.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct FileAccess {
    /// `fs.readTextFile`.
    pub read: bool,
    /// `fs.writeTextFile`.
    pub write: bool,
}

impl FileAccess {
    /// What `initialize`'s `clientCapabilities.fs` declares.
    pub fn declared(fs: &FileSystemCapabilities) -> Self {
        Self {
            read: fs.read_text_file,
            write: fs.write_text_file,
        }
    }
}

/// Reads and writes text through the editor, for one ACP session.
#[derive(Debug)]
pub struct ClientFiles {
    connection: ConnectionTo<Client>,
    /// Set once the conversation is open (its id is the ACP session id).
    session: Arc<OnceLock<SessionId>>,
    access: FileAccess,
}

impl ClientFiles {
    /// The editor's files over `connection`, in the directions `access` allows; `session`
    /// is filled in when the session's id is known.
    pub fn new(
        connection: ConnectionTo<Client>,
        session: Arc<OnceLock<SessionId>>,
        access: FileAccess,
    ) -> Self {
        Self {
            connection,
            session,
            access,
        }
    }

    fn session(&self) -> io::Result<SessionId> {
        self.session
            .get()
            .cloned()
            .ok_or_else(|| io::Error::other("the ACP session is not open yet"))
    }
}

/// The `io::Error` for a failed request to the editor (its code and message).
fn editor_error(method: &str, error: &agent_client_protocol::Error) -> io::Error {
    io::Error::other(format!(
        "the editor answered {method} with an error: {error}"
    ))
}

#[async_trait]
impl TextFiles for ClientFiles {
    fn reads(&self) -> bool {
        self.access.read
    }

    fn writes(&self) -> bool {
        self.access.write
    }

    async fn read_text(&self, path: &Path) -> io::Result<Option<String>> {
        let request = ReadTextFileRequest::new(self.session()?, path.to_path_buf());
        match self.connection.send_request(request).block_task().await {
            Ok(response) => Ok(Some(response.content)),
            Err(error) if error.code == ErrorCode::ResourceNotFound => Ok(None),
            Err(error) => Err(editor_error("fs/read_text_file", &error)),
        }
    }

    async fn write_text(&self, path: &Path, text: &str) -> io::Result<()> {
        let request = WriteTextFileRequest::new(self.session()?, path.to_path_buf(), text);
        self.connection
            .send_request(request)
            .block_task()
            .await
            .map(|_| ())
            .map_err(|error| editor_error("fs/write_text_file", &error))
    }
}
