//! Self-tests of the stand-in model server (`tests/support/anthropic_mock.rs`) with a raw HTTP
//! client: the parts the real Claude Code does not exercise in the smoke tests (chunked
//! bodies, side requests, count_tokens, unknown paths, hanging turns, re-scripting).

#![allow(clippy::unwrap_used, clippy::panic)] // test code: a failed step is a failed test

use crate::support::anthropic_mock::{Kind, MockServer, Turn};
use serde_json::{Value, json};
use std::io::{Read, Write};
use std::net::TcpStream;
use std::time::{Duration, Instant};

struct Response {
    status: u16,
    headers: Vec<(String, String)>,
    body: String,
}

/// Reads one Content-Length response from `s`.
fn read_response(s: &mut TcpStream) -> Response {
    let mut buf = Vec::new();
    let mut byte = [0u8; 1];
    while !buf.ends_with(b"\r\n\r\n") {
        assert_eq!(s.read(&mut byte).unwrap(), 1, "connection closed in head");
        buf.push(byte[0]);
    }
    let head = String::from_utf8(buf).unwrap();
    let mut lines = head.split("\r\n");
    let status = lines.next().unwrap().split(' ').nth(1).unwrap().parse().unwrap();
    let headers: Vec<(String, String)> = lines
        .filter_map(|l| l.split_once(':'))
        .map(|(k, v)| (k.trim().to_ascii_lowercase(), v.trim().to_string()))
        .collect();
    let len: usize = headers.iter().find(|(k, _)| k == "content-length").map_or(0, |(_, v)| v.parse().unwrap());
    let mut body = vec![0u8; len];
    s.read_exact(&mut body).unwrap();
    Response { status, headers, body: String::from_utf8(body).unwrap() }
}

fn post(s: &mut TcpStream, path: &str, body: &Value) -> Response {
    let body = body.to_string();
    write!(
        s,
        "POST {path} HTTP/1.1\r\nhost: x\r\ncontent-type: application/json\r\ncontent-length: {}\r\n\r\n{body}",
        body.len()
    )
    .unwrap();
    read_response(s)
}

fn connect(mock: &MockServer) -> TcpStream {
    let s = TcpStream::connect(("127.0.0.1", mock.port())).unwrap();
    s.set_read_timeout(Some(Duration::from_secs(10))).unwrap();
    s
}

/// The `data:` objects of an SSE body.
fn events(body: &str) -> Vec<Value> {
    body.lines().filter_map(|l| l.strip_prefix("data: ")).map(|d| serde_json::from_str(d).unwrap()).collect()
}

/// Rebuilds the assistant content blocks from SSE events, as a client would.
fn assemble(events: &[Value]) -> (Vec<Value>, String) {
    let mut blocks: Vec<Value> = Vec::new();
    let mut partial: Vec<String> = Vec::new();
    let mut stop = String::new();
    for e in events {
        match e["type"].as_str().unwrap() {
            "content_block_start" => {
                blocks.push(e["content_block"].clone());
                partial.push(String::new());
            }
            "content_block_delta" => {
                let i = e["index"].as_u64().unwrap() as usize;
                match e["delta"]["type"].as_str().unwrap() {
                    "text_delta" => {
                        let t = blocks[i]["text"].as_str().unwrap().to_string();
                        blocks[i]["text"] = json!(t + e["delta"]["text"].as_str().unwrap());
                    }
                    "input_json_delta" => partial[i].push_str(e["delta"]["partial_json"].as_str().unwrap()),
                    other => panic!("unexpected delta {other}"),
                }
            }
            "content_block_stop" => {
                let i = e["index"].as_u64().unwrap() as usize;
                if blocks[i]["type"] == "tool_use" {
                    blocks[i]["input"] = serde_json::from_str(&partial[i]).unwrap();
                }
            }
            "message_delta" => stop = e["delta"]["stop_reason"].as_str().unwrap().to_string(),
            _ => {}
        }
    }
    (blocks, stop)
}

fn tools() -> Value {
    json!([{"name": "Bash", "input_schema": {"type": "object"}}])
}

/// A main request carrying `n` tool results.
fn main_request(n: usize) -> Value {
    let results: Vec<Value> =
        (0..n).map(|i| json!({"type": "tool_result", "tool_use_id": format!("t{i}"), "content": "ok"})).collect();
    let mut messages = vec![json!({"role": "user", "content": "hi"})];
    if n > 0 {
        messages.push(json!({"role": "user", "content": results}));
    }
    json!({"model": "claude-test", "stream": true, "tools": tools(), "messages": messages})
}

#[test]
fn scripted_turns_follow_the_tool_result_count() {
    let mock = MockServer::start(vec![
        Turn::tools([
            ("Write", json!({"file_path": "/p/a", "content": "x"})),
            ("Edit", json!({"file_path": "/p/b", "old_string": "é", "new_string": "ü"})),
        ])
        .with_text("Two at once."),
        Turn::tool("Bash", json!({"command": "true"})),
        Turn::text("Done."),
    ]);
    let mut s = connect(&mock);

    let r = post(&mut s, "/v1/messages?beta=true", &main_request(0));
    assert_eq!(r.status, 200);
    assert!(r.headers.iter().any(|(k, v)| k == "content-type" && v.starts_with("text/event-stream")));
    let ev = events(&r.body);
    let kinds: Vec<&str> = ev.iter().map(|e| e["type"].as_str().unwrap()).collect();
    assert_eq!(kinds.first(), Some(&"message_start"));
    assert_eq!(kinds.last(), Some(&"message_stop"));
    assert_eq!(ev[0]["message"]["model"], "claude-test");
    let (blocks, stop) = assemble(&ev);
    assert_eq!(stop, "tool_use");
    assert_eq!(blocks[0], json!({"type": "text", "text": "Two at once."}));
    assert_eq!(blocks[1]["id"], "toolu_mock_0_0");
    assert_eq!(blocks[1]["name"], "Write");
    assert_eq!(blocks[2]["id"], "toolu_mock_0_1");
    assert_eq!(blocks[2]["input"]["new_string"], "ü");

    // A retry (same count) gets the same turn; keep-alive: same connection throughout.
    let (again, _) = assemble(&events(&post(&mut s, "/v1/messages", &main_request(0)).body));
    assert_eq!(again[1]["id"], "toolu_mock_0_0");

    let (blocks, _) = assemble(&events(&post(&mut s, "/v1/messages", &main_request(2)).body));
    assert_eq!(blocks[0]["id"], "toolu_mock_1_0");
    let (blocks, stop) = assemble(&events(&post(&mut s, "/v1/messages", &main_request(3)).body));
    assert_eq!((blocks[0]["text"].as_str(), stop.as_str()), (Some("Done."), "end_turn"));
    // Beyond the script: a harmless end_turn.
    let (_, stop) = assemble(&events(&post(&mut s, "/v1/messages", &main_request(9)).body));
    assert_eq!(stop, "end_turn");

    let all = mock.all_requests();
    assert!(all.iter().all(|r| r.conn == 0));
    let turns: Vec<Kind> = all.iter().map(|r| r.kind.clone()).collect();
    assert_eq!(turns, [Some(0), Some(0), Some(1), Some(2), None].map(|turn| Kind::Main { turn }));
    assert_eq!(mock.requests().len(), 5);
    assert_eq!(mock.requests()[2]["messages"][1]["content"][1]["tool_use_id"], "t1");
}

#[test]
fn side_requests_count_tokens_and_unknown_paths_are_harmless() {
    let mock = MockServer::start(vec![Turn::text("main")]);
    let mut s = connect(&mock);

    // No tools: a side request (title, quota…), streaming or not; the script does not move.
    let side = json!({"model": "claude-haiku", "stream": true, "messages": [{"role": "user", "content": "title?"}]});
    let (blocks, stop) = assemble(&events(&post(&mut s, "/v1/messages?beta=true", &side).body));
    assert_eq!((blocks[0]["type"].as_str(), stop.as_str()), (Some("text"), "end_turn"));
    let plain = json!({"model": "claude-haiku", "messages": [{"role": "user", "content": "quota"}], "tools": []});
    let r = post(&mut s, "/v1/messages", &plain);
    let v: Value = serde_json::from_str(&r.body).unwrap();
    assert_eq!((v["type"].as_str(), v["stop_reason"].as_str()), (Some("message"), Some("end_turn")));

    let r = post(&mut s, "/v1/messages/count_tokens?beta=true", &main_request(0));
    assert_eq!(r.status, 200);
    assert!(serde_json::from_str::<Value>(&r.body).unwrap()["input_tokens"].is_u64());

    let r = post(&mut s, "/v1/other", &json!({}));
    assert_eq!(r.status, 404);
    assert_eq!(serde_json::from_str::<Value>(&r.body).unwrap()["type"], "error");
    write!(s, "GET /health HTTP/1.1\r\nhost: x\r\n\r\n").unwrap();
    assert_eq!(read_response(&mut s).status, 200);

    // The script is intact.
    let (blocks, _) = assemble(&events(&post(&mut s, "/v1/messages", &main_request(0)).body));
    assert_eq!(blocks[0]["text"], "main");
    let kinds: Vec<Kind> = mock.all_requests().into_iter().map(|r| r.kind).collect();
    assert_eq!(
        kinds,
        [Kind::Side, Kind::Side, Kind::CountTokens, Kind::Other, Kind::Other, Kind::Main { turn: Some(0) }]
    );
    assert_eq!(mock.requests().len(), 3, "requests() holds /v1/messages bodies only");
}

#[test]
fn chunked_bodies_and_expect_continue() {
    let mock = MockServer::start(vec![Turn::text("chunked ok")]);
    let mut s = connect(&mock);
    let body = main_request(0).to_string();
    let (a, b) = body.split_at(body.len() / 3);
    write!(s, "POST /v1/messages HTTP/1.1\r\nhost: x\r\ntransfer-encoding: chunked\r\nexpect: 100-continue\r\n\r\n")
        .unwrap();
    let r = read_response(&mut s);
    assert_eq!(r.status, 100);
    write!(s, "{:x};ext=1\r\n{a}\r\n{:X}\r\n{b}\r\n0\r\n\r\n", a.len(), b.len()).unwrap();
    let r = read_response(&mut s);
    let (blocks, _) = assemble(&events(&r.body));
    assert_eq!(blocks[0]["text"], "chunked ok");
    assert_eq!(mock.requests()[0], main_request(0));
}

#[test]
fn hang_keeps_the_connection_silent_until_drop_and_log_file() {
    let dir = tempfile::tempdir().unwrap();
    let log = dir.path().join("requests.jsonl");
    let mock = MockServer::start(vec![Turn::tool("Bash", json!({"command": "x"})), Turn::hang()]);
    let mut s = connect(&mock);
    post(&mut s, "/v1/messages", &main_request(0));
    mock.log_to_file(&log).unwrap();

    let body = main_request(1).to_string();
    write!(s, "POST /v1/messages HTTP/1.1\r\ncontent-length: {}\r\n\r\n{body}", body.len()).unwrap();
    assert!(mock.wait_for_turn(1, Duration::from_secs(5)));
    s.set_read_timeout(Some(Duration::from_millis(300))).unwrap();
    let mut byte = [0u8; 1];
    let err = s.read(&mut byte).expect_err("a hanging turn must not answer");
    assert!(matches!(err.kind(), std::io::ErrorKind::WouldBlock | std::io::ErrorKind::TimedOut));

    let lines: Vec<Value> =
        std::fs::read_to_string(&log).unwrap().lines().map(|l| serde_json::from_str(l).unwrap()).collect();
    assert_eq!(lines.len(), 2);
    assert_eq!(lines[1]["path"], "/v1/messages");
    assert_eq!(lines[1]["body"], main_request(1));

    let started = Instant::now();
    drop(mock);
    assert!(started.elapsed() < Duration::from_secs(2), "drop took {:?}", started.elapsed());
    s.set_read_timeout(Some(Duration::from_secs(2))).unwrap();
    assert_eq!(s.read(&mut byte).unwrap_or(0), 0, "the connection closes on drop");
}

#[test]
fn script_replaces_the_turns_and_counts_from_the_next_request() {
    let mock = MockServer::start(vec![Turn::tool("Bash", json!({"command": "a"})), Turn::hang()]);
    let mut s = connect(&mock);
    post(&mut s, "/v1/messages", &main_request(0));

    // A resumed conversation carries 3 old results; the new script starts at turn 0 anyway.
    mock.script(vec![Turn::tool("Bash", json!({"command": "b"})), Turn::text("end")]);
    let (blocks, _) = assemble(&events(&post(&mut s, "/v1/messages", &main_request(3)).body));
    assert_eq!(blocks[0]["id"], "toolu_mock_s1_0_0", "ids of a later script differ");
    assert_eq!(blocks[0]["input"]["command"], "b");
    let (blocks, _) = assemble(&events(&post(&mut s, "/v1/messages", &main_request(4)).body));
    assert_eq!(blocks[0]["text"], "end");
}

#[test]
fn connection_close_and_parallel_connections() {
    let mock = MockServer::start(vec![Turn::text("x")]);
    let handles: Vec<_> = (0..4)
        .map(|_| {
            let port = mock.port();
            std::thread::spawn(move || {
                let mut s = TcpStream::connect(("127.0.0.1", port)).unwrap();
                let body = main_request(0).to_string();
                write!(
                    s,
                    "POST /v1/messages HTTP/1.1\r\nconnection: close\r\ncontent-length: {}\r\n\r\n{body}",
                    body.len()
                )
                .unwrap();
                let mut all = String::new();
                s.read_to_string(&mut all).unwrap(); // ends: the server closes
                all
            })
        })
        .collect();
    for h in handles {
        let all = h.join().unwrap();
        assert!(all.starts_with("HTTP/1.1 200"), "{all}");
        assert!(all.contains("message_stop"));
    }
    assert_eq!(mock.main_requests().len(), 4);
}
