//! A stand-in for the Anthropic Messages API, for end-to-end tests that drive the real Claude
//! Code CLI offline (see `README.md` beside this file).
//!
//! std + serde_json only: one accept thread, one thread per connection, HTTP/1.1 with
//! keep-alive, `Content-Length` and chunked request bodies. `POST /v1/messages` (any query
//! string) is answered from a scripted list of [`Turn`]s with Anthropic's streaming events;
//! side requests (no tools: titles, quota checks, …), `count_tokens` and anything else get a
//! harmless answer that does not advance the script. Every request is recorded.
//!
//! Which turn answers a main request is decided by the number of `tool_result` blocks in it:
//! turn `i` answers when the count (relative to the first main request the current script
//! saw) equals the number of tool calls scripted in turns `0..i`. Retries of a request thus
//! get the same answer.
//!
//! A subagent (the `Agent` tool) sends its own main requests (its own system prompt; its first
//! user message is the Agent call's `prompt`). [`MockServer::subagent`] gives such requests their
//! own script: a request whose first user message contains the script's marker is answered from
//! it, with its own tool_result counting, so the main thread and a background subagent can run
//! commands at the same time.

#![allow(dead_code)] // each test binary uses a different part of this module

use serde_json::{Value, json};
use std::fs::File;
use std::io::{self, Read, Write};
use std::net::{SocketAddr, TcpListener, TcpStream};
use std::path::Path;
use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use std::sync::{Arc, Condvar, Mutex, MutexGuard};
use std::thread::{self, JoinHandle};
use std::time::{Duration, Instant};

/// How often blocked threads look at the stop flag.
const POLL: Duration = Duration::from_millis(25);
/// Largest request head or body accepted (Claude Code's requests are a few hundred KB).
const MAX_BODY: usize = 64 << 20;

/// One tool call inside a scripted turn.
#[derive(Clone, Debug)]
pub struct ToolCall {
    pub name: String,
    pub input: Value,
}

/// One scripted answer of the model.
#[derive(Clone, Debug)]
pub enum Turn {
    /// A text block, `stop_reason: end_turn`: the session's prompt is done.
    Text(String),
    /// Optional leading text, then one or several `tool_use` blocks, `stop_reason: tool_use`.
    /// Ids are `toolu_mock_<turn>_<n>` (`toolu_mock_s<generation>_<turn>_<n>` after
    /// [`MockServer::script`] replaced the first script).
    Tools { text: Option<String>, calls: Vec<ToolCall> },
    /// Never answers: the connection stays open, silent, until the server is dropped.
    Hang,
    /// An API error: HTTP `status` (e.g. `"529 Overloaded"`) with Anthropic's error body
    /// `{"type":"error","error":{"type": kind,"message": message}}`. Every retry of the request
    /// gets it again (limit Claude Code's retries with `CLAUDE_CODE_MAX_RETRIES`).
    Error { status: &'static str, kind: String, message: String },
}

impl Turn {
    pub fn text(text: impl Into<String>) -> Turn {
        Turn::Text(text.into())
    }

    /// A turn with a single tool call.
    pub fn tool(name: impl Into<String>, input: Value) -> Turn {
        Turn::tools([(name, input)])
    }

    /// A turn with several tool calls (parallel tool use).
    pub fn tools<N: Into<String>>(calls: impl IntoIterator<Item = (N, Value)>) -> Turn {
        Turn::Tools {
            text: None,
            calls: calls.into_iter().map(|(name, input)| ToolCall { name: name.into(), input }).collect(),
        }
    }

    pub fn hang() -> Turn {
        Turn::Hang
    }

    /// The API answers `529 Overloaded` (`overloaded_error`), as it does under load.
    pub fn overloaded() -> Turn {
        Turn::Error { status: "529 Overloaded", kind: "overloaded_error".into(), message: "Overloaded".into() }
    }

    /// Adds a text block before the tool calls (ignored for other turns).
    pub fn with_text(mut self, t: impl Into<String>) -> Turn {
        if let Turn::Tools { text, .. } = &mut self {
            *text = Some(t.into());
        }
        self
    }

    fn tool_count(&self) -> usize {
        match self {
            Turn::Tools { calls, .. } => calls.len(),
            _ => 0,
        }
    }
}

/// What the server made of a request.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Kind {
    /// A `/v1/messages` request with tools, answered by scripted turn `turn`
    /// (`None`: the script had no turn for it, a short `end_turn` text was sent).
    Main { turn: Option<usize> },
    /// A `/v1/messages` request without tools (title generation, quota check, …).
    Side,
    /// `/v1/messages/count_tokens`.
    CountTokens,
    /// Anything else (answered with 404 JSON, or 200 `{}` for GET/HEAD).
    Other,
}

/// One recorded HTTP request.
#[derive(Clone, Debug)]
pub struct Request {
    pub seq: usize,
    /// Which TCP connection it came on (0, 1, … in accept order).
    pub conn: usize,
    pub method: String,
    /// Path with query string, e.g. `/v1/messages?beta=true`.
    pub path: String,
    /// Header names in lower case.
    pub headers: Vec<(String, String)>,
    /// The body parsed as JSON (`Value::Null` when empty or not JSON).
    pub body: Value,
    pub raw_body: String,
    pub kind: Kind,
    /// The marker of the subagent script that answered it ([`MockServer::subagent`]); `None`
    /// for the main thread's script (and for side requests).
    pub agent: Option<String>,
    /// Milliseconds since the server started.
    pub at_ms: u128,
    /// The same instant in microseconds (benches time hooks with it).
    pub at_us: u128,
}

impl Request {
    pub fn header(&self, name: &str) -> Option<&str> {
        let name = name.to_ascii_lowercase();
        self.headers.iter().find(|(k, _)| *k == name).map(|(_, v)| v.as_str())
    }

    pub fn is_main(&self) -> bool {
        matches!(self.kind, Kind::Main { .. })
    }

    /// A main request of the main thread (not of a subagent).
    pub fn is_main_thread(&self) -> bool {
        self.is_main() && self.agent.is_none()
    }

    /// The `tool_result` blocks of the request's messages.
    pub fn tool_results(&self) -> Vec<&Value> {
        tool_results(&self.body)
    }

    /// How many times `needle` occurs in the JSON strings of the body (after JSON unescaping).
    pub fn count(&self, needle: &str) -> usize {
        strings_containing(&self.body, needle).iter().map(|s| s.matches(needle).count()).sum()
    }
}

/// The `tool_result` blocks in a Messages API request body.
pub fn tool_results(body: &Value) -> Vec<&Value> {
    let mut out = Vec::new();
    for msg in body["messages"].as_array().into_iter().flatten() {
        for block in msg["content"].as_array().into_iter().flatten() {
            if block["type"] == "tool_result" {
                out.push(block);
            }
        }
    }
    out
}

/// Every string value (at any depth) in `v` that contains `needle`.
pub fn strings_containing<'a>(v: &'a Value, needle: &str) -> Vec<&'a str> {
    fn walk<'a>(v: &'a Value, needle: &str, out: &mut Vec<&'a str>) {
        match v {
            Value::String(s) if s.contains(needle) => out.push(s),
            Value::Array(a) => a.iter().for_each(|x| walk(x, needle, out)),
            Value::Object(o) => o.values().for_each(|x| walk(x, needle, out)),
            _ => {}
        }
    }
    let mut out = Vec::new();
    walk(v, needle, &mut out);
    out
}

struct State {
    script: Script,
    /// Subagents' scripts, each chosen by a marker in its first user message.
    subagents: Vec<(String, Script)>,
    requests: Vec<Request>,
    log: Option<File>,
}

/// One conversation's scripted turns and how far it got.
struct Script {
    turns: Vec<Turn>,
    generation: usize,
    /// tool_result count of the first main request under the current script.
    baseline: Option<usize>,
    served: Vec<bool>,
    /// Tool use id prefix (`toolu_mock_`, `toolu_mock_s1_`, `toolu_mock_a0_`, …).
    prefix: String,
}

impl Script {
    fn new(turns: Vec<Turn>, prefix: String) -> Script {
        Script { served: vec![false; turns.len()], turns, generation: 0, baseline: None, prefix }
    }
}

struct Shared {
    state: Mutex<State>,
    changed: Condvar,
    stop: AtomicBool,
    started: Instant,
    msg_ids: AtomicUsize,
    conn_ids: AtomicUsize,
}

impl Shared {
    fn lock(&self) -> MutexGuard<'_, State> {
        self.state.lock().unwrap_or_else(|e| e.into_inner())
    }
    fn stopping(&self) -> bool {
        self.stop.load(Ordering::SeqCst)
    }
}

/// The running server. Dropping it stops every thread (hanging turns included).
pub struct MockServer {
    addr: SocketAddr,
    shared: Arc<Shared>,
    accept: Option<JoinHandle<()>>,
    conns: Arc<Mutex<Vec<JoinHandle<()>>>>,
}

impl MockServer {
    /// Starts the server on `127.0.0.1:<free port>` with the given script.
    pub fn start(turns: Vec<Turn>) -> MockServer {
        let listener = TcpListener::bind("127.0.0.1:0").expect("bind 127.0.0.1:0");
        listener.set_nonblocking(true).expect("nonblocking listener");
        let addr = listener.local_addr().expect("local addr");
        let shared = Arc::new(Shared {
            state: Mutex::new(State {
                script: Script::new(turns, "toolu_mock_".into()),
                subagents: Vec::new(),
                requests: Vec::new(),
                log: None,
            }),
            changed: Condvar::new(),
            stop: AtomicBool::new(false),
            started: Instant::now(),
            msg_ids: AtomicUsize::new(0),
            conn_ids: AtomicUsize::new(0),
        });
        let conns: Arc<Mutex<Vec<JoinHandle<()>>>> = Arc::default();
        let accept = {
            let shared = shared.clone();
            let conns = conns.clone();
            thread::Builder::new()
                .name("anthropic-mock-accept".into())
                .spawn(move || accept_loop(listener, shared, conns))
                .expect("spawn accept thread")
        };
        MockServer { addr, shared, accept: Some(accept), conns }
    }

    /// `http://127.0.0.1:<port>`, the value for `ANTHROPIC_BASE_URL`.
    pub fn base_url(&self) -> String {
        format!("http://{}", self.addr)
    }

    pub fn port(&self) -> u16 {
        self.addr.port()
    }

    /// Replaces the script (e.g. between two sessions). The new script starts at the next main
    /// request, whatever its number of tool results (a resumed conversation carries old ones).
    pub fn script(&self, turns: Vec<Turn>) {
        let mut st = self.shared.lock();
        let generation = st.script.generation + 1;
        st.script = Script::new(turns, format!("toolu_mock_s{generation}_"));
        st.script.generation = generation;
    }

    /// Gives a subagent its own script: every main request whose **first user message**
    /// contains `marker` (put it in the `Agent` call's `prompt`, and nowhere in the session's
    /// own prompt) is answered from `turns`, counted by its own tool results. Its tool use ids
    /// are `toolu_mock_a<k>_<turn>_<n>` (`k`: the k-th subagent script). Requests answered by
    /// it carry `agent: Some(marker)`.
    pub fn subagent(&self, marker: &str, turns: Vec<Turn>) {
        let mut st = self.shared.lock();
        let k = st.subagents.len();
        st.subagents.push((marker.to_string(), Script::new(turns, format!("toolu_mock_a{k}_"))));
    }

    /// The main requests a subagent script answered.
    pub fn subagent_requests(&self, marker: &str) -> Vec<Request> {
        self.shared.lock().requests.iter().filter(|r| r.agent.as_deref() == Some(marker)).cloned().collect()
    }

    /// The main thread's main requests (a subagent's left out).
    pub fn main_thread_requests(&self) -> Vec<Request> {
        self.shared.lock().requests.iter().filter(|r| r.is_main_thread()).cloned().collect()
    }

    /// Also appends every request (past and future) to `path` as JSON lines
    /// `{"seq","at_ms","method","path","kind","headers","body"}`.
    pub fn log_to_file(&self, path: &Path) -> io::Result<()> {
        let mut file = File::create(path)?;
        let mut st = self.shared.lock();
        for r in &st.requests {
            writeln!(file, "{}", log_line(r))?;
        }
        st.log = Some(file);
        Ok(())
    }

    /// Every request so far, in arrival order.
    pub fn all_requests(&self) -> Vec<Request> {
        self.shared.lock().requests.clone()
    }

    /// The JSON bodies of every `/v1/messages` request (main and side) so far.
    pub fn requests(&self) -> Vec<Value> {
        self.shared
            .lock()
            .requests
            .iter()
            .filter(|r| matches!(r.kind, Kind::Main { .. } | Kind::Side))
            .map(|r| r.body.clone())
            .collect()
    }

    /// The main-loop requests (those with tools) so far.
    pub fn main_requests(&self) -> Vec<Request> {
        self.shared.lock().requests.iter().filter(|r| r.is_main()).cloned().collect()
    }

    /// Waits until some recorded request satisfies `pred`; returns it, or `None` on timeout.
    pub fn wait_for(&self, timeout: Duration, mut pred: impl FnMut(&Request) -> bool) -> Option<Request> {
        let deadline = Instant::now() + timeout;
        let mut st = self.shared.lock();
        loop {
            if let Some(r) = st.requests.iter().find(|r| pred(r)) {
                return Some(r.clone());
            }
            let left = deadline.checked_duration_since(Instant::now())?;
            st = self.shared.changed.wait_timeout(st, left.min(POLL)).unwrap_or_else(|e| e.into_inner()).0;
        }
    }

    /// Waits until the main thread's scripted turn `turn` has been sent (or, for a hanging
    /// turn, requested).
    pub fn wait_for_turn(&self, turn: usize, timeout: Duration) -> bool {
        self.wait_for(timeout, |r| r.agent.is_none() && r.kind == Kind::Main { turn: Some(turn) }).is_some()
    }

    /// Waits until the subagent script `marker` has sent its turn `turn`.
    pub fn wait_for_subagent_turn(&self, marker: &str, turn: usize, timeout: Duration) -> bool {
        self.wait_for(timeout, |r| r.agent.as_deref() == Some(marker) && r.kind == Kind::Main { turn: Some(turn) })
            .is_some()
    }

    /// A readable summary of the requests, for assertion messages.
    pub fn summary(&self) -> String {
        let st = self.shared.lock();
        let mut s = String::new();
        for r in &st.requests {
            s.push_str(&format!(
                "#{} conn{} +{}ms {} {} {:?}{} model={} tools={} tool_results={}\n",
                r.seq,
                r.conn,
                r.at_ms,
                r.method,
                r.path,
                r.kind,
                r.agent.as_deref().map(|m| format!(" agent={m}")).unwrap_or_default(),
                r.body["model"].as_str().unwrap_or("-"),
                r.body["tools"].as_array().map_or(0, |a| a.len()),
                tool_results(&r.body).len(),
            ));
        }
        s
    }
}

impl Drop for MockServer {
    fn drop(&mut self) {
        self.shared.stop.store(true, Ordering::SeqCst);
        if let Some(h) = self.accept.take() {
            let _ = h.join();
        }
        let handles = std::mem::take(&mut *self.conns.lock().unwrap_or_else(|e| e.into_inner()));
        for h in handles {
            let _ = h.join();
        }
    }
}

fn log_line(r: &Request) -> String {
    json!({
        "seq": r.seq,
        "conn": r.conn,
        "at_ms": r.at_ms as u64,
        "method": r.method,
        "path": r.path,
        "kind": format!("{:?}", r.kind),
        "agent": r.agent,
        "headers": r.headers.iter().map(|(k, v)| json!([k, v])).collect::<Vec<_>>(),
        "body": if r.body.is_null() { Value::String(r.raw_body.clone()) } else { r.body.clone() },
    })
    .to_string()
}

fn accept_loop(listener: TcpListener, shared: Arc<Shared>, conns: Arc<Mutex<Vec<JoinHandle<()>>>>) {
    while !shared.stopping() {
        match listener.accept() {
            Ok((stream, _)) => {
                let shared = shared.clone();
                let id = shared.conn_ids.fetch_add(1, Ordering::SeqCst);
                let h = thread::Builder::new().name("anthropic-mock-conn".into()).spawn(move || {
                    let _ = serve_connection(stream, id, &shared);
                });
                if let Ok(h) = h {
                    conns.lock().unwrap_or_else(|e| e.into_inner()).push(h);
                }
            }
            Err(e) if e.kind() == io::ErrorKind::WouldBlock => thread::sleep(Duration::from_millis(5)),
            Err(_) => thread::sleep(POLL),
        }
    }
}

/// A connection with a read buffer; reads give up only when the server stops.
struct Conn<'a> {
    stream: TcpStream,
    buf: Vec<u8>,
    shared: &'a Shared,
}

impl Conn<'_> {
    /// Reads more bytes into the buffer. `Ok(false)` on EOF.
    fn fill(&mut self) -> io::Result<bool> {
        let mut chunk = [0u8; 64 * 1024];
        loop {
            if self.shared.stopping() {
                return Err(io::Error::other("server stopping"));
            }
            match self.stream.read(&mut chunk) {
                Ok(0) => return Ok(false),
                Ok(n) => {
                    self.buf.extend_from_slice(&chunk[..n]);
                    return Ok(true);
                }
                Err(e)
                    if matches!(
                        e.kind(),
                        io::ErrorKind::WouldBlock | io::ErrorKind::TimedOut | io::ErrorKind::Interrupted
                    ) => {}
                Err(e) => return Err(e),
            }
        }
    }

    /// Reads up to and including the next CRLF; returns the line without it.
    fn line(&mut self) -> io::Result<Option<String>> {
        loop {
            if let Some(i) = self.buf.windows(2).position(|w| w == b"\r\n") {
                let line = String::from_utf8_lossy(&self.buf[..i]).into_owned();
                self.buf.drain(..i + 2);
                return Ok(Some(line));
            }
            if self.buf.len() > MAX_BODY {
                return Err(io::Error::other("line too long"));
            }
            if !self.fill()? {
                return Ok(None);
            }
        }
    }

    fn exact(&mut self, n: usize) -> io::Result<Vec<u8>> {
        if n > MAX_BODY {
            return Err(io::Error::other("body too large"));
        }
        while self.buf.len() < n {
            if !self.fill()? {
                return Err(io::ErrorKind::UnexpectedEof.into());
            }
        }
        Ok(self.buf.drain(..n).collect())
    }

    fn send(&mut self, bytes: &[u8]) -> io::Result<()> {
        self.stream.write_all(bytes)?;
        self.stream.flush()
    }
}

struct Http {
    method: String,
    path: String,
    headers: Vec<(String, String)>,
    body: Vec<u8>,
}

impl Http {
    fn header(&self, name: &str) -> Option<&str> {
        self.headers.iter().find(|(k, _)| k == name).map(|(_, v)| v.as_str())
    }
}

/// Reads one request; `Ok(None)` when the client closed the connection between requests.
fn read_request(conn: &mut Conn) -> io::Result<Option<Http>> {
    let start = loop {
        match conn.line()? {
            None => return Ok(None),
            Some(l) if l.is_empty() => continue, // stray CRLF between requests
            Some(l) => break l,
        }
    };
    let mut parts = start.split_whitespace();
    let method = parts.next().unwrap_or("").to_string();
    let path = parts.next().unwrap_or("/").to_string();
    let mut headers = Vec::new();
    loop {
        let l = conn.line()?.ok_or(io::ErrorKind::UnexpectedEof)?;
        if l.is_empty() {
            break;
        }
        if let Some((k, v)) = l.split_once(':') {
            headers.push((k.trim().to_ascii_lowercase(), v.trim().to_string()));
        }
    }
    let mut req = Http { method, path, headers, body: Vec::new() };
    if req.header("expect").is_some_and(|v| v.eq_ignore_ascii_case("100-continue")) {
        conn.send(b"HTTP/1.1 100 Continue\r\n\r\n")?;
    }
    let chunked = req.header("transfer-encoding").is_some_and(|v| v.to_ascii_lowercase().contains("chunked"));
    if chunked {
        loop {
            let size_line = conn.line()?.ok_or(io::ErrorKind::UnexpectedEof)?;
            let size_hex = size_line.split(';').next().unwrap_or("").trim();
            let size = usize::from_str_radix(size_hex, 16)
                .map_err(|_| io::Error::other(format!("bad chunk size {size_line:?}")))?;
            if size == 0 {
                // Trailers, up to the empty line.
                while !conn.line()?.ok_or(io::ErrorKind::UnexpectedEof)?.is_empty() {}
                break;
            }
            let chunk = conn.exact(size)?;
            req.body.extend_from_slice(&chunk);
            if req.body.len() > MAX_BODY {
                return Err(io::Error::other("body too large"));
            }
            conn.exact(2)?; // CRLF after the chunk
        }
    } else if let Some(len) = req.header("content-length") {
        let len: usize = len.parse().map_err(|_| io::Error::other("bad content-length"))?;
        req.body = conn.exact(len)?;
    }
    Ok(Some(req))
}

fn serve_connection(stream: TcpStream, conn_id: usize, shared: &Shared) -> io::Result<()> {
    stream.set_read_timeout(Some(POLL))?;
    stream.set_write_timeout(Some(Duration::from_secs(30)))?;
    let _ = stream.set_nodelay(true);
    let mut conn = Conn { stream, buf: Vec::new(), shared };
    while let Some(req) = read_request(&mut conn)? {
        let close = req.header("connection").is_some_and(|v| v.eq_ignore_ascii_case("close"));
        match respond(&req, conn_id, shared) {
            Reply::Hang => {
                while !shared.stopping() {
                    thread::sleep(POLL);
                }
                return Ok(());
            }
            Reply::Send { status, content_type, body } => {
                let head = format!(
                    "HTTP/1.1 {status}\r\ncontent-type: {content_type}\r\ncontent-length: {}\r\n\
                     cache-control: no-cache\r\nrequest-id: req_mock_{}\r\nconnection: {}\r\n\r\n",
                    body.len(),
                    shared.msg_ids.fetch_add(1, Ordering::SeqCst),
                    if close { "close" } else { "keep-alive" },
                );
                let mut out = head.into_bytes();
                if req.method != "HEAD" {
                    out.extend_from_slice(body.as_bytes());
                }
                conn.send(&out)?;
            }
        }
        if close {
            break;
        }
    }
    Ok(())
}

enum Reply {
    Send { status: &'static str, content_type: &'static str, body: String },
    Hang,
}

fn respond(req: &Http, conn_id: usize, shared: &Shared) -> Reply {
    let body: Value = serde_json::from_slice(&req.body).unwrap_or(Value::Null);
    let route = req.path.split('?').next().unwrap_or("");
    let is_post = req.method == "POST";
    let has_tools = body["tools"].as_array().is_some_and(|t| !t.is_empty());

    let mut st = shared.lock();
    let mut agent = None;
    let (kind, reply) = if is_post && route.ends_with("/v1/messages/count_tokens") {
        (Kind::CountTokens, json_reply("200 OK", json!({"input_tokens": 42})))
    } else if is_post && route.ends_with("/v1/messages") && has_tools {
        let first = first_user_text(&body);
        let st = &mut *st;
        let script = match st.subagents.iter_mut().find(|(m, _)| first.contains(m.as_str())) {
            Some((m, script)) => {
                agent = Some(m.clone());
                script
            }
            None => &mut st.script,
        };
        let (turn, reply) = main_reply(script, &body, shared);
        (Kind::Main { turn }, reply)
    } else if is_post && route.ends_with("/v1/messages") {
        let text = "OK";
        (Kind::Side, message_reply(&body, &[Block::Text(text)], "end_turn", shared))
    } else if req.method == "GET" || req.method == "HEAD" {
        (Kind::Other, json_reply("200 OK", json!({})))
    } else {
        (
            Kind::Other,
            json_reply(
                "404 Not Found",
                json!({"type": "error", "error": {"type": "not_found_error", "message": "mock: not found"}}),
            ),
        )
    };

    let at = shared.started.elapsed();
    let record = Request {
        seq: st.requests.len(),
        conn: conn_id,
        method: req.method.clone(),
        path: req.path.clone(),
        headers: req.headers.clone(),
        raw_body: String::from_utf8_lossy(&req.body).into_owned(),
        body,
        kind,
        agent,
        at_ms: at.as_millis(),
        at_us: at.as_micros(),
    };
    if let Some(log) = st.log.as_mut() {
        let _ = writeln!(log, "{}", log_line(&record));
        let _ = log.flush();
    }
    st.requests.push(record);
    drop(st);
    shared.changed.notify_all();
    reply
}

/// The text of the first `user` message of a request (its string content, or its text blocks
/// joined): the session's prompt for the main thread, the `Agent` call's prompt for a subagent.
fn first_user_text(body: &Value) -> String {
    let Some(msg) = body["messages"].as_array().into_iter().flatten().find(|m| m["role"] == "user") else {
        return String::new();
    };
    match &msg["content"] {
        Value::String(s) => s.clone(),
        Value::Array(blocks) => blocks
            .iter()
            .filter(|b| b["type"] == "text")
            .filter_map(|b| b["text"].as_str())
            .collect::<Vec<_>>()
            .join("\n"),
        _ => String::new(),
    }
}

/// Picks the scripted turn for a main request and renders it.
fn main_reply(st: &mut Script, body: &Value, shared: &Shared) -> (Option<usize>, Reply) {
    let count = tool_results(body).len();
    let baseline = *st.baseline.get_or_insert(count);
    let key = count.saturating_sub(baseline);

    // Turn i starts when `key` equals the tool calls of turns 0..i. Several turns can share a
    // start (text turns have no calls): take the first one not served yet, else the last.
    let mut start = 0;
    let mut candidates = Vec::new();
    for (i, t) in st.turns.iter().enumerate() {
        if start == key {
            candidates.push(i);
        }
        start += t.tool_count();
    }
    let chosen = candidates.iter().copied().find(|&i| !st.served[i]).or(candidates.last().copied());
    let Some(i) = chosen else {
        let text = "(mock: the script has no turn for this request)";
        return (None, message_reply(body, &[Block::Text(text)], "end_turn", shared));
    };
    st.served[i] = true;
    let prefix = st.prefix.clone();
    let reply = match &st.turns[i] {
        Turn::Hang => Reply::Hang,
        Turn::Error { status, kind, message } => {
            json_reply(status, json!({"type": "error", "error": {"type": kind, "message": message}}))
        }
        Turn::Text(t) => message_reply(body, &[Block::Text(t)], "end_turn", shared),
        Turn::Tools { text, calls } => {
            let mut blocks = Vec::new();
            if let Some(t) = text {
                blocks.push(Block::Text(t));
            }
            let ids: Vec<String> = (0..calls.len()).map(|n| format!("{prefix}{i}_{n}")).collect();
            for (c, id) in calls.iter().zip(&ids) {
                blocks.push(Block::ToolUse { id, name: &c.name, input: &c.input });
            }
            message_reply(body, &blocks, "tool_use", shared)
        }
    };
    (Some(i), reply)
}

enum Block<'a> {
    Text(&'a str),
    ToolUse { id: &'a str, name: &'a str, input: &'a Value },
}

fn json_reply(status: &'static str, v: Value) -> Reply {
    Reply::Send { status, content_type: "application/json", body: v.to_string() }
}

/// An assistant message, as SSE events when the request asked for `stream`, else as JSON.
fn message_reply(req: &Value, blocks: &[Block], stop_reason: &str, shared: &Shared) -> Reply {
    let model = req["model"].as_str().unwrap_or("claude-mock");
    let id = format!("msg_mock_{}", shared.msg_ids.fetch_add(1, Ordering::SeqCst));
    let usage = json!({"input_tokens": 100, "output_tokens": 20,
                       "cache_creation_input_tokens": 0, "cache_read_input_tokens": 0});
    if req["stream"] != true {
        let content: Vec<Value> = blocks
            .iter()
            .map(|b| match b {
                Block::Text(t) => json!({"type": "text", "text": t}),
                Block::ToolUse { id, name, input } => {
                    json!({"type": "tool_use", "id": id, "name": name, "input": input})
                }
            })
            .collect();
        return json_reply(
            "200 OK",
            json!({"id": id, "type": "message", "role": "assistant", "model": model,
                   "content": content, "stop_reason": stop_reason, "stop_sequence": null,
                   "usage": usage}),
        );
    }

    let mut out = String::new();
    let mut event = |name: &str, data: Value| {
        out.push_str(&format!("event: {name}\ndata: {data}\n\n"));
    };
    event(
        "message_start",
        json!({"type": "message_start", "message": {
            "id": id, "type": "message", "role": "assistant", "model": model, "content": [],
            "stop_reason": null, "stop_sequence": null,
            "usage": {"input_tokens": 100, "output_tokens": 1,
                      "cache_creation_input_tokens": 0, "cache_read_input_tokens": 0}}}),
    );
    event("ping", json!({"type": "ping"}));
    for (index, b) in blocks.iter().enumerate() {
        match b {
            Block::Text(t) => {
                event(
                    "content_block_start",
                    json!({"type": "content_block_start", "index": index,
                           "content_block": {"type": "text", "text": ""}}),
                );
                for piece in split_in_two(t) {
                    event(
                        "content_block_delta",
                        json!({"type": "content_block_delta", "index": index,
                               "delta": {"type": "text_delta", "text": piece}}),
                    );
                }
            }
            Block::ToolUse { id, name, input } => {
                event(
                    "content_block_start",
                    json!({"type": "content_block_start", "index": index,
                           "content_block": {"type": "tool_use", "id": id, "name": name, "input": {}}}),
                );
                let input = input.to_string();
                for piece in split_in_two(&input) {
                    event(
                        "content_block_delta",
                        json!({"type": "content_block_delta", "index": index,
                               "delta": {"type": "input_json_delta", "partial_json": piece}}),
                    );
                }
            }
        }
        event("content_block_stop", json!({"type": "content_block_stop", "index": index}));
    }
    event(
        "message_delta",
        json!({"type": "message_delta",
               "delta": {"stop_reason": stop_reason, "stop_sequence": null},
               "usage": {"output_tokens": 20}}),
    );
    event("message_stop", json!({"type": "message_stop"}));
    Reply::Send { status: "200 OK", content_type: "text/event-stream; charset=utf-8", body: out }
}

/// Splits a string in two pieces at a char boundary (deltas arrive in pieces in real streams).
fn split_in_two(s: &str) -> Vec<&str> {
    if s.len() < 2 {
        return vec![s];
    }
    let mut mid = s.len() / 2;
    while !s.is_char_boundary(mid) {
        mid += 1;
    }
    vec![&s[..mid], &s[mid..]]
}
