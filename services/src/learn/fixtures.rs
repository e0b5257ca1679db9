//! Test fixtures shared by the learning tests: the draft call, its checks, a Petstore document
//! and forms.

use serde_json::{Value, json};
use svc_ports::{ActionSpec, Domain, FieldOption, Form, FormField, MapDocument};

use super::{Draft, LearnError, LearnInput, compile, draft_map};

pub(super) const BASE: &str = "https://shop.example.com";

pub(super) fn domain() -> Domain {
    Domain::parse("shop.example.com").unwrap()
}

pub(super) fn learn(openapi: Option<&Value>, forms: &[Form]) -> Result<Draft, LearnError> {
    let d = domain();
    draft_map(&LearnInput {
        domain: &d,
        base_url: BASE,
        openapi,
        forms,
    })
}

/// What every draft must satisfy: the map checks, and schemas the import compiles.
pub(super) fn assert_valid(draft: &Draft) {
    draft
        .document
        .check()
        .expect("learned maps pass MapDocument::check");
    assert_eq!(draft.document.base_url, BASE);
    for a in &draft.document.actions {
        compile(&a.params_schema).unwrap_or_else(|e| panic!("{}: params: {e}", a.name));
        compile(&a.output_schema).unwrap_or_else(|e| panic!("{}: output: {e}", a.name));
        assert!(a.family.allowed());
        if !a.request.method.is_safe() {
            assert!(a.consequential, "{} changes state", a.name);
        }
    }
    // A draft round-trips through the map file format.
    let text = serde_json::to_string(&draft.document).unwrap();
    let back: MapDocument = serde_json::from_str(&text).unwrap();
    assert_eq!(back, draft.document);
}

pub(super) fn action<'d>(draft: &'d Draft, name: &str) -> &'d ActionSpec {
    draft.document.action(name).unwrap_or_else(|| {
        let names: Vec<&str> = draft
            .document
            .actions
            .iter()
            .map(|a| a.name.as_str())
            .collect();
        panic!(
            "no action `{name}` in {names:?}; skipped: {:#?}",
            draft.skipped
        )
    })
}

pub(super) fn skipped_with<'d>(draft: &'d Draft, needle: &str) -> &'d str {
    draft
        .skipped
        .iter()
        .find(|s| s.contains(needle))
        .unwrap_or_else(|| panic!("nothing skipped with `{needle}`: {:#?}", draft.skipped))
}

pub(super) fn petstore() -> Value {
    json!({
        "openapi": "3.1.0",
        "info": {"title": "Petstore", "version": "1.0.0"},
        "servers": [{"url": "https://shop.example.com/api/v1"}, {"url": "https://mirror.example.net/v1"}],
        "security": [{"key": []}],
        "components": {
            "securitySchemes": {"key": {"type": "apiKey", "in": "header", "name": "X-Api-Key"}},
            "schemas": {
                "Pet": {
                    "type": "object",
                    "required": ["id", "name"],
                    "properties": {
                        "id": {"type": "integer"},
                        "name": {"type": "string"},
                        "tag": {"type": "string"},
                        "category": {"$ref": "#/components/schemas/Category"}
                    }
                },
                "Category": {
                    "type": "object",
                    "properties": {
                        "id": {"type": "integer"},
                        "name": {"type": "string"},
                        "parent": {"$ref": "#/components/schemas/Category"}
                    }
                },
                "Pets": {"type": "array", "items": {"$ref": "#/components/schemas/Pet"}},
                "NewOrder": {
                    "type": "object",
                    "required": ["petId", "quantity"],
                    "properties": {
                        "petId": {"type": "integer"},
                        "quantity": {"type": "integer", "minimum": 1},
                        "note": {"type": "string"},
                        "id": {"type": "string", "readOnly": true}
                    }
                },
                "Order": {
                    "allOf": [
                        {"$ref": "#/components/schemas/NewOrder"},
                        {
                            "type": "object",
                            "required": ["id", "status", "shipDate"],
                            "properties": {
                                "id": {"type": "string"},
                                "status": {"type": "string", "enum": ["placed", "approved"]},
                                "shipDate": {"type": ["string", "null"]}
                            }
                        }
                    ]
                }
            },
            "parameters": {
                "Limit": {"name": "limit", "in": "query", "description": "How many  at most.", "schema": {"type": "integer", "maximum": 100}}
            },
            "requestBodies": {
                "NewOrder": {"required": true, "content": {"application/json": {"schema": {"$ref": "#/components/schemas/NewOrder"}}}}
            }
        },
        "paths": {
            "/pets": {
                "get": {
                    "operationId": "listPets",
                    "summary": "List all pets",
                    "security": [],
                    "parameters": [
                        {"$ref": "#/components/parameters/Limit"},
                        {"name": "tag", "in": "query", "required": true, "schema": {"type": "string"}},
                        {"name": "X-Request-ID", "in": "header", "schema": {"type": "string"}},
                        {"name": "Accept", "in": "header", "schema": {"type": "string"}}
                    ],
                    "responses": {
                        "200": {"description": "ok", "content": {"application/json": {"schema": {"$ref": "#/components/schemas/Pets"}}}},
                        "default": {"description": "error"}
                    }
                }
            },
            "/pets/{petId}": {
                "parameters": [{"name": "petId", "in": "path", "required": true, "description": "The pet's id.", "schema": {"type": "integer"}}],
                "get": {
                    "operationId": "showPetById",
                    "summary": "Info for a specific pet",
                    "security": [{}],
                    "responses": {"200": {"description": "ok", "content": {"application/json": {"schema": {"$ref": "#/components/schemas/Pet"}}}}}
                },
                "delete": {
                    "operationId": "deletePet",
                    "description": "Deletes a pet.\n\nThe pet is gone afterwards.",
                    "responses": {"204": {"description": "deleted"}}
                },
                "head": {"operationId": "petExists", "responses": {"200": {"description": "ok"}}}
            },
            "/store/order": {
                "post": {
                    "operationId": "placeOrder",
                    "summary": "Place an order for a pet",
                    "requestBody": {"$ref": "#/components/requestBodies/NewOrder"},
                    "responses": {
                        "201": {"description": "placed", "content": {"application/json": {"schema": {"$ref": "#/components/schemas/Order"}}}},
                        "400": {"description": "bad"}
                    }
                }
            },
            "/user/login": {
                "post": {
                    "operationId": "loginUser",
                    "requestBody": {"content": {"application/json": {"schema": {"type": "object", "properties": {"username": {"type": "string"}}}}}},
                    "responses": {"200": {"description": "ok"}}
                }
            },
            "/users/{id}": {
                "put": {
                    "operationId": "updateUser",
                    "requestBody": {"content": {"application/json": {"schema": {"type": "object", "properties": {"name": {"type": "string"}, "password": {"type": "string"}}}}}},
                    "responses": {"200": {"description": "ok"}}
                }
            },
            "/feeds": {
                "get": {
                    "operationId": "listFeeds",
                    "servers": [{"url": "https://feeds.example.net"}],
                    "responses": {"200": {"description": "ok"}}
                }
            },
            "/legacy": {"get": {"operationId": "legacy", "deprecated": true, "responses": {}}},
            "/cart/items": {
                "post": {
                    "operationId": "addToCart",
                    "requestBody": {"required": true, "content": {"application/x-www-form-urlencoded": {"schema": {"type": "object", "required": ["sku"], "properties": {"sku": {"type": "string"}, "qty": {"type": "integer"}}}}}},
                    "responses": {"200": {"description": "ok"}}
                }
            },
            "/appointments": {
                "post": {
                    "summary": "Reserve a grooming slot",
                    "requestBody": {"required": true, "content": {"application/json": {"schema": {"type": "array", "items": {"type": "string"}}}}},
                    "responses": {"201": {"description": "ok"}}
                }
            },
            "/uploads": {
                "post": {
                    "operationId": "uploadPhoto",
                    "requestBody": {"required": true, "content": {"multipart/form-data": {"schema": {"type": "object"}}}},
                    "responses": {"200": {"description": "ok"}}
                }
            },
            "/newsletter/unsubscribe": {
                "get": {
                    "operationId": "unsubscribeNewsletter",
                    "parameters": [{"name": "email", "in": "query", "required": true, "schema": {"type": "string", "format": "email"}}],
                    "responses": {"200": {"description": "ok"}}
                }
            }
        }
    })
}

// ---- forms ----

pub(super) fn field(name: &str, kind: &str) -> FormField {
    FormField {
        name: name.into(),
        field_type: kind.into(),
        label: None,
        required: false,
        default_value: None,
        options: Vec::new(),
    }
}

pub(super) fn option(value: &str) -> FieldOption {
    FieldOption {
        value: value.into(),
        label: value.to_uppercase(),
        selected: false,
    }
}

pub(super) fn form(action: &str, method: &str, fields: Vec<FormField>) -> Form {
    Form {
        id: None,
        name: None,
        action: action.into(),
        method: method.into(),
        enctype: "application/x-www-form-urlencoded".into(),
        fields,
    }
}

pub(super) fn search_form() -> Form {
    let mut category = field("category", "select");
    category.options = vec![option(""), option("dogs"), option("cats")];
    let mut lang = field("lang", "hidden");
    lang.default_value = Some("en".into());
    let mut q = field("q", "search");
    q.label = Some("Search the shop".into());
    form(
        "https://shop.example.com/search?from=header",
        "GET",
        vec![q, category, lang],
    )
}
