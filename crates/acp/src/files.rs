//! The editor's file system as pith's text files: when the client declares
//! `fs.readTextFile` / `fs.writeTextFile`, `read`, `edit` and `write` take and put text
//! with `fs/read_text_file` / `fs/write_text_file`, so unsaved buffers are what the agent
//! sees and changes. Each direction is used only when declared; the other stays on disk.

use std::io;
use std::path::Path;

use agent_client_protocol::v1::schema::{
    ErrorCode, FileSystemCapabilities, ReadTextFileRequest, WriteTextFileRequest,
};
use async_trait::async_trait;
use pith_tools::TextFiles;

use crate::editor::{editor_error, Editor};

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
    editor: Editor,
    access: FileAccess,
}

impl ClientFiles {
    /// `editor`'s files, in the directions `access` allows.
    pub fn new(editor: Editor, access: FileAccess) -> Self {
        Self { editor, access }
    }
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
        let request = ReadTextFileRequest::new(self.editor.session()?, path.to_path_buf());
        match self.editor.ask(request).await {
            Ok(response) => Ok(Some(response.content)),
            Err(error) if error.code == ErrorCode::ResourceNotFound => Ok(None),
            Err(error) => Err(editor_error("fs/read_text_file", &error)),
        }
    }

    async fn write_text(&self, path: &Path, text: &str) -> io::Result<()> {
        let request = WriteTextFileRequest::new(self.editor.session()?, path.to_path_buf(), text);
        self.editor
            .ask(request)
            .await
            .map(|_| ())
            .map_err(|error| editor_error("fs/write_text_file", &error))
    }
}
