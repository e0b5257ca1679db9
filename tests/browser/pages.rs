//! Every page a person meets (issue 20, item 7), at a phone's width and a desktop's: nothing
//! to scroll sideways and every control labelled; a missing page is a page in sentences, not
//! problem JSON; Approve and Deny look different.

use super::layout::{WIDTHS, assert_fits, assert_labelled, set_width};
use super::*;

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn every_page_fits_a_phone_and_a_desktop_and_labels_its_controls() -> anyhow::Result<()> {
    let (app, _clock) = spawn_app().await;
    let browser = Browser::start().await;
    let signed_out = [
        "/",
        "/signin",
        "/terms",
        "/privacy",
        "/device",
        "/no-such-page",
    ];
    for width in WIDTHS {
        set_width(&browser, width).await?;
        for path in signed_out {
            browser.client.goto(&app.url(path)).await?;
            let what = format!("{path} at {width} px");
            assert_fits(&browser, &what).await?;
            assert_labelled(&browser, &what).await?;
        }
    }
    // A browser that asks for a missing page reads a sentence and a way back.
    browser.client.goto(&app.url("/no-such-page")).await?;
    assert_eq!(browser.text_of("heading").await?, "Not found");
    assert!(browser.text_of("message").await?.ends_with('.'));
    browser.element("next-link").await?;

    // Signed in through an agent's link: the approval page, then the account's pages.
    let agent = start_agent(&app).await;
    reach_approval_page(&app, &browser, &agent, "pages@example.com").await?;
    let colours = browser
        .client
        .execute(
            "return ['approve', 'deny'].map(id => getComputedStyle(document.getElementById(id)).backgroundColor)",
            vec![],
        )
        .await?;
    assert_ne!(
        colours[0], colours[1],
        "Approve and Deny look alike: {colours}"
    );
    let approval = browser.client.current_url().await?.to_string();
    for width in WIDTHS {
        set_width(&browser, width).await?;
        for url in [
            approval.clone(),
            app.url("/account"),
            app.url("/account/activity"),
            app.url("/account/webhooks"),
        ] {
            browser.client.goto(&url).await?;
            let what = format!("{url} at {width} px");
            assert_fits(&browser, &what).await?;
            assert_labelled(&browser, &what).await?;
        }
    }
    browser.close().await
}
