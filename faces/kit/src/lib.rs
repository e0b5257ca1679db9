//! What the faces share, and nothing else: the context every face holds, the one table from a
//! service's error to the problem a caller gets, key and client-address extraction, the web
//! session lookup, the edge middleware, and the wire types (the JSON bodies REST answers, MCP
//! tools return as structured content and `svc read --format json` prints).
//!
//! Faces depend on this crate, on the services and on the ports; never on one another.

pub mod accept;
pub mod context;
pub mod detach;
pub mod edge;
pub mod errors;
pub mod headers;
pub mod json_body;
pub mod limits;
pub mod problem;
pub mod schema;
pub mod session;
pub mod wire;

pub use context::{AppContext, Limits, Origins};
pub use json_body::JsonBody;
pub use problem::ApiProblem;
