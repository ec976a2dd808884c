//! JSON-RPC 2.0's error codes and the error a tool or method handler returns: the ground floor
//! of `walj mcp`, below the protocol ([`super::protocol`]) and the tools ([`super::tools`]).

pub(crate) const PARSE_ERROR: i64 = -32700;
pub(crate) const INVALID_REQUEST: i64 = -32600;
pub(crate) const METHOD_NOT_FOUND: i64 = -32601;
pub(crate) const INVALID_PARAMS: i64 = -32602;

/// A JSON-RPC error: (code, message).
pub(crate) type RpcError = (i64, String);
