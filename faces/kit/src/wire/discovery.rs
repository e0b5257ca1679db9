//! What one face publishes about itself for another face's discovery files: built by the face
//! that owns it, handed over by the composition root, served by the well-known face.

use serde_json::Value;

/// One MCP tool as the discovery files list it.
#[derive(Debug, Clone)]
pub struct ToolListing {
    pub name: String,
    pub title: String,
    pub description: String,
    pub requires_api_key: bool,
    /// The tool as `tools/list` answers it (name, description, schemas, annotations).
    pub tool: Value,
}

/// The MCP endpoint's tools and instructions.
#[derive(Debug, Clone, Default)]
pub struct McpListing {
    pub instructions: String,
    pub tools: Vec<ToolListing>,
}
