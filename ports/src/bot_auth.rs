//! Web Bot Auth: the key directory that lets a site verify this service's outbound requests
//! (HTTP Message Signatures, RFC 9421, as the Web Bot Auth protocol draft profiles them).

/// The service's Web Bot Auth identity as the well-known face serves it.
pub trait BotDirectory: Send + Sync {
    /// The JWK Set served at `/.well-known/http-message-signatures-directory`: the key that
    /// signs now and any previous keys kept during a rotation, each `kid` its RFC 7638
    /// thumbprint.
    fn jwks(&self) -> Vec<u8>;

    /// The possession proofs of a directory response: one signature per key the service holds,
    /// over the `@authority` the directory was fetched at and the body's `Content-Digest`,
    /// created at `created` (Unix seconds).
    fn proof(&self, authority: &str, body: &[u8], created: u64) -> DirectoryProof;
}

/// The response fields that carry a directory's possession proofs.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct DirectoryProof {
    pub content_digest: String,
    pub signature_input: String,
    pub signature: String,
}
