//! What reading a page yields besides its main content: links, forms and metadata.

use std::collections::BTreeMap;

use serde::{Deserialize, Serialize};

#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Link {
    /// Absolute URL.
    pub url: String,
    pub text: String,
    /// `rel` tokens, lower-cased.
    pub rel: Vec<String>,
    /// Same registrable site as the page (same host, or one is a subdomain of the other).
    pub same_site: bool,
}

#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct FieldOption {
    pub value: String,
    pub label: String,
    pub selected: bool,
}

#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct FormField {
    pub name: String,
    /// `text`, `email`, `select`, `textarea`, `checkbox`, ...
    pub field_type: String,
    pub label: Option<String>,
    pub required: bool,
    pub default_value: Option<String>,
    pub options: Vec<FieldOption>,
}

#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Form {
    pub id: Option<String>,
    pub name: Option<String>,
    /// Absolute action URL (the page's URL when the form has none).
    pub action: String,
    /// Upper-case `GET` or `POST`.
    pub method: String,
    pub enctype: String,
    pub fields: Vec<FormField>,
}

#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct PageMetadata {
    pub title: Option<String>,
    pub description: Option<String>,
    pub canonical: Option<String>,
    pub language: Option<String>,
    /// `og:*` properties without the prefix.
    pub open_graph: BTreeMap<String, String>,
    /// `twitter:*` names without the prefix.
    pub twitter: BTreeMap<String, String>,
    pub json_ld: Vec<serde_json::Value>,
    pub author: Option<String>,
    pub published_time: Option<String>,
    pub site_name: Option<String>,
    pub favicon: Option<String>,
}
