//! What every page test checks at a phone's width (390 px) and a desktop's (1280 px): nothing
//! to scroll sideways, and every control named for a person (and a screen reader).

use super::*;

/// A phone (390 px) and a desktop (1280 px).
pub const WIDTHS: [u32; 2] = [390, 1280];

/// Sizes the viewport to `width` CSS pixels (the window's chrome, if any, added by measuring).
pub async fn set_width(browser: &Browser, width: u32) -> anyhow::Result<()> {
    let inner = || async {
        anyhow::Ok(
            browser
                .client
                .execute("return window.innerWidth", vec![])
                .await?
                .as_u64()
                .unwrap_or_default() as u32,
        )
    };
    browser.client.set_window_size(width, 900).await?;
    let now = inner().await?;
    if now != width {
        browser
            .client
            .set_window_size(width + width.saturating_sub(now), 900)
            .await?;
    }
    assert_eq!(inner().await?, width, "viewport width");
    Ok(())
}

/// The page is no wider than the viewport: nothing to scroll sideways.
pub async fn assert_fits(browser: &Browser, what: &str) -> anyhow::Result<()> {
    let sizes = browser
        .client
        .execute(
            "return [document.documentElement.scrollWidth, document.documentElement.clientWidth]",
            vec![],
        )
        .await?;
    let (scroll, client) = (sizes[0].as_u64(), sizes[1].as_u64());
    assert!(
        scroll <= client,
        "{what} overflows: {scroll:?} px wide in a {client:?} px viewport"
    );
    Ok(())
}

/// Controls no label names: an input, select or textarea without `<label for>`, a wrapping
/// label, `aria-label` or `aria-labelledby`; a button without text.
const UNNAMED_CONTROLS: &str = r#"
return [...document.querySelectorAll('input, select, textarea, button')]
  .filter(e => e.type !== 'hidden')
  .filter(e => !(e.labels && e.labels.length) && !e.getAttribute('aria-label')
    && !e.getAttribute('aria-labelledby')
    && !((e.tagName === 'BUTTON' || e.type === 'submit') && (e.textContent.trim() || e.value)))
  .map(e => e.outerHTML.slice(0, 160));
"#;

pub async fn assert_labelled(browser: &Browser, what: &str) -> anyhow::Result<()> {
    let unnamed = browser.client.execute(UNNAMED_CONTROLS, vec![]).await?;
    assert_eq!(unnamed, json!([]), "{what}: controls without a label");
    Ok(())
}
