//! [`Output`]: where a command writes — stdout, or a writer an embedding program (or a test)
//! gives. Cheap to clone: the progress view of a turn writes to the same place as the command.

use std::io::Write;
use std::sync::{Arc, Mutex, PoisonError};

/// A shared writer. Each write locks it, so lines from a turn's progress and from the command
/// never interleave mid-write.
#[derive(Clone)]
pub struct Output(Arc<Mutex<Box<dyn Write + Send>>>);

impl std::fmt::Debug for Output {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("Output")
    }
}

impl Output {
    /// The process's stdout.
    pub fn stdout() -> Self {
        Self::new(std::io::stdout())
    }

    /// Any writer.
    pub fn new(writer: impl Write + Send + 'static) -> Self {
        Self(Arc::new(Mutex::new(Box::new(writer))))
    }
}

impl Write for Output {
    fn write(&mut self, buf: &[u8]) -> std::io::Result<usize> {
        self.0
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .write(buf)
    }

    fn write_all(&mut self, buf: &[u8]) -> std::io::Result<()> {
        self.0
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .write_all(buf)
    }

    fn flush(&mut self) -> std::io::Result<()> {
        self.0
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .flush()
    }
}
