//! WebMCP on the landing page: a small inline script registers two tools with the browser's
//! agent (`navigator.modelContext`), each calling the public API — `scan_site` (the readiness
//! scan, no key) and `read_page` (a page as Markdown, with the agent's API key). The page's
//! Content-Security-Policy allows exactly this script, by its hash, and fetches to the API.

use base64::{Engine, engine::general_purpose::STANDARD};
use sha2::Digest;

/// The script, with the API's origin filled in.
pub fn script(base_url: &str) -> String {
    // A JSON string is a JavaScript string literal; `</` must not end the element early.
    let api = serde_json::to_string(base_url)
        .unwrap_or_else(|_| "\"\"".into())
        .replace("</", "<\\/");
    format!(
        r#"(() => {{
  const api = {api};
  const mc = navigator.modelContext;
  if (!mc) return;
  const call = async (path, init) => {{
    const r = await fetch(api + path, init);
    return {{ content: [{{ type: "text", text: await r.text() }}], isError: !r.ok }};
  }};
  const tools = [
    {{
      name: "scan_site",
      description: "Scan a website for agent readiness (robots.txt, llms.txt, OpenAPI, MCP, A2A, OAuth metadata, Markdown, structured data, forms) and return the report with its level, score and what to fix. Reads only; needs no key.",
      inputSchema: {{ type: "object", properties: {{ url: {{ type: "string", format: "uri", description: "The site to scan, e.g. https://example.com" }} }}, required: ["url"] }},
      annotations: {{ readOnlyHint: true }},
      execute: ({{ url }}) => call("/api/readiness/scan", {{ method: "POST", headers: {{ "Content-Type": "application/json" }}, body: JSON.stringify({{ url }}) }}),
    }},
    {{
      name: "read_page",
      description: "Read a public web page as clean Markdown with its links, forms and metadata. Needs an API key of this service (svc_...): sign up at /llms.txt if you have none.",
      inputSchema: {{ type: "object", properties: {{ url: {{ type: "string", format: "uri", description: "The page to read" }}, api_key: {{ type: "string", description: "Your API key, svc_live_... or svc_test_..." }} }}, required: ["url", "api_key"] }},
      annotations: {{ readOnlyHint: true }},
      execute: ({{ url, api_key }}) => call("/api/read?url=" + encodeURIComponent(url), {{ headers: {{ Authorization: "Bearer " + api_key }} }}),
    }},
  ];
  if (typeof mc.registerTool === "function") tools.forEach((t) => mc.registerTool(t));
  else if (typeof mc.provideContext === "function") mc.provideContext({{ tools }});
}})();"#
    )
}

/// The landing page's policy: the pages' own (no other script, no framing) plus this script by
/// its SHA-256 and fetches to the API's origin.
pub fn content_security_policy(script: &str, base_url: &str) -> String {
    let hash = STANDARD.encode(sha2::Sha256::digest(script.as_bytes()));
    let api = url::Url::parse(base_url)
        .map(|u| u.origin().ascii_serialization())
        .unwrap_or_default();
    format!(
        "default-src 'none'; script-src 'sha256-{hash}'; connect-src 'self' {api}; style-src 'unsafe-inline'; form-action 'self'; frame-ancestors 'none'; base-uri 'none'"
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_policy_allows_the_script_by_hash_and_the_api() {
        let s = script("https://api.example");
        assert!(s.contains("const api = \"https://api.example\";"));
        assert!(s.contains("registerTool"));
        let csp = content_security_policy(&s, "https://api.example/");
        assert!(csp.contains("script-src 'sha256-"));
        assert!(csp.contains("connect-src 'self' https://api.example;"));
        assert!(!csp.contains("unsafe-eval") && !csp.contains("script-src 'unsafe-inline'"));
        assert!(script("x</script>").contains("x<\\/script>"));
    }
}
