//! Stand-ins for the model APIs of Codex CLI, Gemini CLI and Copilot CLI, for end-to-end tests
//! that drive the real CLIs offline (see `README.md` beside this file). What the three share is
//! here once: the HTTP/1.1 server (one thread per connection, keep-alive, `Content-Length` or
//! chunked bodies, zstd- or gzip-encoded bodies), the script of [`Turn`]s, the rule that picks a
//! turn (the number of tool results in the request, as in `anthropic_mock.rs`) and the record
//! of every request. What differs is a [`Protocol`]:
//!
//! | protocol | agent | main request | answer |
//! |---|---|---|---|
//! | [`Protocol::Responses`] | Codex | `POST …/responses` with `tools` | SSE: `response.created`, one `response.output_item.done` per item (`function_call`, `custom_tool_call` for freeform tools such as `apply_patch`, `message`), `response.completed` |
//! | [`Protocol::ChatCompletions`] | Copilot | `POST …/chat/completions` with `tools` | SSE chunks (`delta.tool_calls`, `delta.content`), `finish_reason`, `data: [DONE]` |
//! | [`Protocol::Gemini`] | Gemini | `POST …:streamGenerateContent?alt=sse` with `tools` | SSE: one `GenerateContentResponse` with `functionCall` or `text` parts |
//!
//! Side requests (no tools: Gemini's model router and next-speaker checks, titles) get a small
//! answer that never moves the script; a request asking for JSON that follows a schema
//! (`generationConfig.responseJsonSchema`) gets an object built from the schema.

#![allow(dead_code)] // each test binary uses a different part of this module

use std::io::{self, Read, Write};
use std::net::{SocketAddr, TcpListener, TcpStream};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Condvar, Mutex, MutexGuard};
use std::thread::{self, JoinHandle};
use std::time::{Duration, Instant};

use serde_json::{Value, json};

const POLL: Duration = Duration::from_millis(25);
const MAX_BODY: usize = 64 << 20;

/// Which API the stand-in speaks.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Protocol {
    /// OpenAI Responses API, streaming (Codex CLI's `wire_api = "responses"`).
    Responses,
    /// OpenAI Chat Completions, streaming (Copilot CLI's BYOK provider).
    ChatCompletions,
    /// Gemini API (`streamGenerateContent`, `generateContent`, `countTokens`).
    Gemini,
}

/// One tool call of a scripted turn.
#[derive(Debug, Clone)]
pub struct Call {
    pub name: String,
    /// The arguments (a JSON object), or the raw input of a freeform tool (`apply_patch`).
    pub args: Value,
}

/// One scripted answer.
#[derive(Debug, Clone)]
pub enum Turn {
    /// The final text of the session's prompt.
    Text(String),
    /// Tool calls (several: parallel calls).
    Tools(Vec<Call>),
    /// Never answers (until the server is dropped).
    Hang,
}

impl Turn {
    pub fn text(t: impl Into<String>) -> Turn {
        Turn::Text(t.into())
    }
    pub fn tool(name: &str, args: Value) -> Turn {
        Turn::Tools(vec![Call { name: name.into(), args }])
    }
    pub fn tools<'a>(calls: impl IntoIterator<Item = (&'a str, Value)>) -> Turn {
        Turn::Tools(calls.into_iter().map(|(n, a)| Call { name: n.into(), args: a }).collect())
    }
    fn calls(&self) -> usize {
        match self {
            Turn::Tools(c) => c.len(),
            _ => 0,
        }
    }
}

/// One recorded request.
#[derive(Debug, Clone)]
pub struct Request {
    pub seq: usize,
    pub method: String,
    pub path: String,
    pub body: Value,
    /// `Some(turn index)` for a main request answered from the script, `Some(None)`-like
    /// `main` with `turn: None` when the script had no turn left; `main == false`: a side request.
    pub main: bool,
    pub turn: Option<usize>,
    pub at_ms: u128,
}

impl Request {
    /// How many times `needle` occurs in the body's JSON strings.
    pub fn count(&self, needle: &str) -> usize {
        strings(&self.body).iter().map(|s| s.matches(needle).count()).sum()
    }
}

/// Every string value (at any depth) of `v`.
pub fn strings(v: &Value) -> Vec<&str> {
    fn walk<'a>(v: &'a Value, out: &mut Vec<&'a str>) {
        match v {
            Value::String(s) => out.push(s),
            Value::Array(a) => a.iter().for_each(|x| walk(x, out)),
            Value::Object(o) => o.values().for_each(|x| walk(x, out)),
            _ => {}
        }
    }
    let mut out = Vec::new();
    walk(v, &mut out);
    out
}

struct State {
    script: Vec<Turn>,
    served: Vec<bool>,
    baseline: Option<usize>,
    generation: usize,
    requests: Vec<Request>,
}

struct Shared {
    protocol: Protocol,
    state: Mutex<State>,
    changed: Condvar,
    stop: AtomicBool,
    started: Instant,
}

impl Shared {
    fn lock(&self) -> MutexGuard<'_, State> {
        self.state.lock().unwrap_or_else(|e| e.into_inner())
    }
}

/// The running stand-in; dropping it stops every thread.
pub struct AgentMock {
    addr: SocketAddr,
    shared: Arc<Shared>,
    accept: Option<JoinHandle<()>>,
    conns: Arc<Mutex<Vec<JoinHandle<()>>>>,
}

impl AgentMock {
    pub fn start(protocol: Protocol, script: Vec<Turn>) -> AgentMock {
        let listener = TcpListener::bind("127.0.0.1:0").expect("bind");
        listener.set_nonblocking(true).expect("nonblocking");
        let addr = listener.local_addr().expect("addr");
        let served = vec![false; script.len()];
        let shared = Arc::new(Shared {
            protocol,
            state: Mutex::new(State { script, served, baseline: None, generation: 0, requests: vec![] }),
            changed: Condvar::new(),
            stop: AtomicBool::new(false),
            started: Instant::now(),
        });
        let conns: Arc<Mutex<Vec<JoinHandle<()>>>> = Arc::default();
        let accept = {
            let (shared, conns) = (shared.clone(), conns.clone());
            thread::spawn(move || {
                while !shared.stop.load(Ordering::SeqCst) {
                    match listener.accept() {
                        Ok((stream, _)) => {
                            let shared = shared.clone();
                            let h = thread::spawn(move || {
                                let _ = serve(stream, &shared);
                            });
                            conns.lock().unwrap_or_else(|e| e.into_inner()).push(h);
                        }
                        Err(_) => thread::sleep(Duration::from_millis(5)),
                    }
                }
            })
        };
        AgentMock { addr, shared, accept: Some(accept), conns }
    }

    /// `http://127.0.0.1:<port>`.
    pub fn base_url(&self) -> String {
        format!("http://{}", self.addr)
    }

    /// Replaces the script; its turn 0 answers the next main request whatever it carries.
    pub fn script(&self, turns: Vec<Turn>) {
        let mut st = self.shared.lock();
        st.served = vec![false; turns.len()];
        st.script = turns;
        st.baseline = None;
        st.generation += 1;
    }

    pub fn requests(&self) -> Vec<Request> {
        self.shared.lock().requests.clone()
    }

    pub fn main_requests(&self) -> Vec<Request> {
        self.requests().into_iter().filter(|r| r.main).collect()
    }

    /// Main requests since the script was last replaced... by sequence number `from`.
    pub fn main_requests_from(&self, from: usize) -> Vec<Request> {
        self.requests().into_iter().filter(|r| r.main && r.seq >= from).collect()
    }

    /// How many requests so far (a mark for [`AgentMock::main_requests_from`]).
    pub fn mark(&self) -> usize {
        self.shared.lock().requests.len()
    }

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

    /// One line per request, for assertion messages.
    pub fn summary(&self) -> String {
        self.requests()
            .iter()
            .map(|r| format!("#{} +{}ms {} {} main={} turn={:?}\n", r.seq, r.at_ms, r.method, r.path, r.main, r.turn))
            .collect()
    }
}

impl Drop for AgentMock {
    fn drop(&mut self) {
        self.shared.stop.store(true, Ordering::SeqCst);
        if let Some(h) = self.accept.take() {
            let _ = h.join();
        }
        for h in std::mem::take(&mut *self.conns.lock().unwrap_or_else(|e| e.into_inner())) {
            let _ = h.join();
        }
    }
}

// ---------------------------------------------------------------------------------------------
// HTTP

struct Conn<'a> {
    stream: TcpStream,
    buf: Vec<u8>,
    shared: &'a Shared,
}

impl Conn<'_> {
    fn fill(&mut self) -> io::Result<bool> {
        let mut chunk = [0u8; 64 * 1024];
        loop {
            if self.shared.stop.load(Ordering::SeqCst) {
                return Err(io::Error::other("stopping"));
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

    fn line(&mut self) -> io::Result<Option<String>> {
        loop {
            if let Some(i) = self.buf.windows(2).position(|w| w == b"\r\n") {
                let l = String::from_utf8_lossy(&self.buf[..i]).into_owned();
                self.buf.drain(..i + 2);
                return Ok(Some(l));
            }
            if self.buf.len() > MAX_BODY || !self.fill()? {
                return Ok(None);
            }
        }
    }

    fn exact(&mut self, n: usize) -> io::Result<Vec<u8>> {
        while self.buf.len() < n {
            if n > MAX_BODY || !self.fill()? {
                return Err(io::ErrorKind::UnexpectedEof.into());
            }
        }
        Ok(self.buf.drain(..n).collect())
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

fn read_request(c: &mut Conn) -> io::Result<Option<Http>> {
    let start = loop {
        match c.line()? {
            None => return Ok(None),
            Some(l) if l.is_empty() => continue,
            Some(l) => break l,
        }
    };
    let mut parts = start.split_whitespace();
    let method = parts.next().unwrap_or("").to_string();
    let path = parts.next().unwrap_or("/").to_string();
    let mut headers = Vec::new();
    loop {
        let l = c.line()?.ok_or(io::ErrorKind::UnexpectedEof)?;
        if l.is_empty() {
            break;
        }
        if let Some((k, v)) = l.split_once(':') {
            headers.push((k.trim().to_ascii_lowercase(), v.trim().to_string()));
        }
    }
    let mut req = Http { method, path, headers, body: vec![] };
    if req.header("expect").is_some_and(|v| v.eq_ignore_ascii_case("100-continue")) {
        c.stream.write_all(b"HTTP/1.1 100 Continue\r\n\r\n")?;
    }
    if req.header("transfer-encoding").is_some_and(|v| v.to_ascii_lowercase().contains("chunked")) {
        loop {
            let size_line = c.line()?.ok_or(io::ErrorKind::UnexpectedEof)?;
            let size = usize::from_str_radix(size_line.split(';').next().unwrap_or("").trim(), 16)
                .map_err(|_| io::Error::other("bad chunk size"))?;
            if size == 0 {
                while !c.line()?.ok_or(io::ErrorKind::UnexpectedEof)?.is_empty() {}
                break;
            }
            let chunk = c.exact(size)?;
            req.body.extend_from_slice(&chunk);
            c.exact(2)?;
        }
    } else if let Some(len) = req.header("content-length") {
        let len: usize = len.parse().map_err(|_| io::Error::other("bad content-length"))?;
        req.body = c.exact(len)?;
    }
    match req.header("content-encoding") {
        Some("zstd") => req.body = zstd::decode_all(&req.body[..]).unwrap_or_default(),
        Some("gzip") => {
            let mut out = Vec::new();
            let _ = flate2::read::GzDecoder::new(&req.body[..]).read_to_end(&mut out);
            req.body = out;
        }
        _ => {}
    }
    Ok(Some(req))
}

fn serve(stream: TcpStream, shared: &Shared) -> io::Result<()> {
    stream.set_read_timeout(Some(POLL))?;
    let _ = stream.set_nodelay(true);
    let mut c = Conn { stream, buf: vec![], shared };
    while let Some(req) = read_request(&mut c)? {
        let close = req.header("connection").is_some_and(|v| v.eq_ignore_ascii_case("close"));
        match respond(&req, shared) {
            None => {
                while !shared.stop.load(Ordering::SeqCst) {
                    thread::sleep(POLL);
                }
                return Ok(());
            }
            Some((status, ctype, body)) => {
                let head = format!(
                    "HTTP/1.1 {status}\r\ncontent-type: {ctype}\r\ncontent-length: {}\r\ncache-control: no-cache\r\nconnection: {}\r\n\r\n",
                    body.len(),
                    if close { "close" } else { "keep-alive" }
                );
                c.stream.write_all(head.as_bytes())?;
                c.stream.write_all(body.as_bytes())?;
                c.stream.flush()?;
            }
        }
        if close {
            break;
        }
    }
    Ok(())
}

// ---------------------------------------------------------------------------------------------
// Protocols

/// `(status, content type, body)`, or `None` to hang.
type Reply = Option<(&'static str, &'static str, String)>;

fn respond(req: &Http, shared: &Shared) -> Reply {
    let body: Value = serde_json::from_slice(&req.body).unwrap_or(Value::Null);
    let route = req.path.split('?').next().unwrap_or("").to_string();
    let has_tools = body["tools"].as_array().is_some_and(|t| !t.is_empty());
    let p = shared.protocol;
    let main = req.method == "POST"
        && has_tools
        && match p {
            Protocol::Responses => route.ends_with("/responses"),
            Protocol::ChatCompletions => route.ends_with("/chat/completions"),
            Protocol::Gemini => route.contains(":streamGenerateContent") || route.contains(":generateContent"),
        };
    let mut st = shared.lock();
    let (turn, reply) = if main {
        let results = tool_results(p, &body);
        let baseline = *st.baseline.get_or_insert(results);
        let key = results.saturating_sub(baseline);
        let mut start = 0;
        let mut candidates = vec![];
        for (i, t) in st.script.iter().enumerate() {
            if start == key {
                candidates.push(i);
            }
            start += t.calls();
        }
        let chosen = candidates.iter().copied().find(|&i| !st.served[i]).or(candidates.last().copied());
        match chosen {
            Some(i) => {
                st.served[i] = true;
                let prefix = if st.generation == 0 {
                    "call_mock_".to_string()
                } else {
                    format!("call_mock_s{}_", st.generation)
                };
                (Some(i), render(p, &st.script[i], &prefix, i, &route))
            }
            None => (None, render(p, &Turn::text("(mock: no turn left)"), "call_mock_", 0, &route)),
        }
    } else {
        (None, side(p, req, &body, &route))
    };
    let seq = st.requests.len();
    st.requests.push(Request {
        seq,
        method: req.method.clone(),
        path: req.path.clone(),
        body,
        main,
        turn,
        at_ms: shared.started.elapsed().as_millis(),
    });
    drop(st);
    shared.changed.notify_all();
    reply
}

/// The tool results a main request carries.
fn tool_results(p: Protocol, body: &Value) -> usize {
    match p {
        Protocol::Responses => body["input"]
            .as_array()
            .into_iter()
            .flatten()
            .filter(|i| matches!(i["type"].as_str(), Some("function_call_output" | "custom_tool_call_output")))
            .count(),
        Protocol::ChatCompletions => {
            body["messages"].as_array().into_iter().flatten().filter(|m| m["role"] == "tool").count()
        }
        Protocol::Gemini => body["contents"]
            .as_array()
            .into_iter()
            .flatten()
            .flat_map(|c| c["parts"].as_array().into_iter().flatten())
            .filter(|part| part.get("functionResponse").is_some())
            .count(),
    }
}

fn sse(events: &[(Option<&str>, Value)], end: &str) -> String {
    let mut out = String::new();
    for (name, data) in events {
        if let Some(n) = name {
            out.push_str(&format!("event: {n}\n"));
        }
        out.push_str(&format!("data: {data}\n\n"));
    }
    out.push_str(end);
    out
}

fn render(p: Protocol, turn: &Turn, prefix: &str, i: usize, route: &str) -> Reply {
    let calls: Vec<(String, &Call)> = match turn {
        Turn::Hang => return None,
        Turn::Tools(c) => c.iter().enumerate().map(|(n, c)| (format!("{prefix}{i}_{n}"), c)).collect(),
        Turn::Text(_) => vec![],
    };
    let text = match turn {
        Turn::Text(t) => Some(t.as_str()),
        _ => None,
    };
    let body = match p {
        Protocol::Responses => {
            let mut ev = vec![(
                Some("response.created"),
                json!({"type": "response.created", "response": {"id": format!("resp_{i}")}}),
            )];
            for (n, (id, c)) in calls.iter().enumerate() {
                let item = match &c.args {
                    Value::String(input) => {
                        json!({"type": "custom_tool_call", "id": format!("ctc_{id}"), "status": "completed",
                                                   "call_id": id, "name": c.name, "input": input})
                    }
                    args => json!({"type": "function_call", "id": format!("fc_{id}"), "status": "completed",
                                   "call_id": id, "name": c.name, "arguments": args.to_string()}),
                };
                ev.push((
                    Some("response.output_item.done"),
                    json!({"type": "response.output_item.done", "output_index": n, "item": item}),
                ));
            }
            if let Some(t) = text {
                ev.push((
                    Some("response.output_item.done"),
                    json!({"type": "response.output_item.done", "output_index": 0, "item": {"type": "message", "role": "assistant",
                           "id": format!("msg_{i}"), "status": "completed", "content": [{"type": "output_text", "text": t, "annotations": []}]}}),
                ));
            }
            ev.push((
                Some("response.completed"),
                json!({"type": "response.completed", "response": {"id": format!("resp_{i}"), "usage": {"input_tokens": 10,
                       "input_tokens_details": null, "output_tokens": 5, "output_tokens_details": null, "total_tokens": 15}}}),
            ));
            sse(&ev, "")
        }
        Protocol::ChatCompletions => {
            let chunk = |delta: Value, finish: Value| {
                json!({"id": "chatcmpl-mock", "object": "chat.completion.chunk", "created": 1, "model": "mock",
                       "choices": [{"index": 0, "delta": delta, "finish_reason": finish}]})
            };
            let mut ev = vec![];
            if calls.is_empty() {
                ev.push((None, chunk(json!({"role": "assistant", "content": text.unwrap_or("")}), Value::Null)));
                ev.push((None, chunk(json!({}), json!("stop"))));
            } else {
                let tcs: Vec<Value> = calls
                    .iter()
                    .enumerate()
                    .map(|(n, (id, c))| json!({"index": n, "id": id, "type": "function", "function": {"name": c.name, "arguments": c.args.to_string()}}))
                    .collect();
                ev.push((None, chunk(json!({"role": "assistant", "content": null, "tool_calls": tcs}), Value::Null)));
                ev.push((None, chunk(json!({}), json!("tool_calls"))));
            }
            let mut last = ev.pop().map(|(_, v)| v).unwrap_or(Value::Null);
            last["usage"] = json!({"prompt_tokens": 10, "completion_tokens": 5, "total_tokens": 15});
            ev.push((None, last));
            sse(&ev, "data: [DONE]\n\n")
        }
        Protocol::Gemini => {
            let parts: Vec<Value> = if calls.is_empty() {
                vec![json!({"text": text.unwrap_or("")})]
            } else {
                calls.iter().map(|(_, c)| json!({"functionCall": {"name": c.name, "args": c.args}})).collect()
            };
            let resp = gemini_response(parts);
            if route.contains(":streamGenerateContent") {
                format!("data: {resp}\r\n\r\n")
            } else {
                return Some(("200 OK", "application/json", resp.to_string()));
            }
        }
    };
    Some(("200 OK", "text/event-stream", body))
}

fn gemini_response(parts: Vec<Value>) -> Value {
    json!({"candidates": [{"content": {"role": "model", "parts": parts}, "finishReason": "STOP", "index": 0}],
           "usageMetadata": {"promptTokenCount": 10, "candidatesTokenCount": 5, "totalTokenCount": 15},
           "modelVersion": "gemini-mock"})
}

/// A value following a JSON schema (strings "x", numbers 1, the first enum value).
fn from_schema(s: &Value) -> Value {
    if let Some(e) = s["enum"].as_array().and_then(|e| e.first()) {
        return e.clone();
    }
    match s["type"].as_str().map(str::to_ascii_lowercase).as_deref() {
        Some("object") => {
            let mut o = serde_json::Map::new();
            for (k, v) in s["properties"].as_object().into_iter().flatten() {
                o.insert(k.clone(), from_schema(v));
            }
            Value::Object(o)
        }
        Some("array") => json!([]),
        Some("integer" | "number") => json!(1),
        Some("boolean") => json!(false),
        _ => json!("x"),
    }
}

/// Answers to side requests: never from the script.
fn side(p: Protocol, req: &Http, body: &Value, route: &str) -> Reply {
    if req.method != "POST" {
        return Some(("200 OK", "application/json", json!({"data": [], "models": []}).to_string()));
    }
    match p {
        Protocol::Gemini if route.contains(":countTokens") => {
            Some(("200 OK", "application/json", json!({"totalTokens": 42}).to_string()))
        }
        Protocol::Gemini => {
            let schema = &body["generationConfig"]["responseJsonSchema"];
            let text = if schema.is_object() {
                from_schema(schema).to_string()
            } else if body.to_string().contains("next_speaker") {
                json!({"reasoning": "x", "next_speaker": "user"}).to_string()
            } else {
                "OK".to_string()
            };
            let resp = gemini_response(vec![json!({"text": text})]);
            if route.contains(":streamGenerateContent") {
                Some(("200 OK", "text/event-stream", format!("data: {resp}\r\n\r\n")))
            } else {
                Some(("200 OK", "application/json", resp.to_string()))
            }
        }
        Protocol::Responses | Protocol::ChatCompletions => render(p, &Turn::text("OK"), "side_", 0, route),
    }
}
