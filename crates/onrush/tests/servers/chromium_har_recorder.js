// A real Chromium (Debian's /usr/bin/chromium, driven by playwright-core) walks through
// shop_server.py the way a user does and saves the HAR Chromium's network events make: open
// the sign-in page (its stylesheet, image and a script from another host load with it), type
// the user and password, submit the form (303 to /home), click "Order a book" (the page's
// script creates the order, reads it and pays it with fetch()).
//
// The HAR is written by Playwright's recorder from Chromium's DevTools-protocol events, not by
// onrush: the importer is tested against what a browser really sends (headers, cookies, form
// bodies, redirects) rather than against what we think it sends.
//
// usage: node chromium_har_recorder.js PORT OUT.har
// playwright-core comes from tests/install-chromium-har.sh (it installs it beside this file).
"use strict";

const { chromium } = require("playwright-core");

async function main() {
  const [port, out] = process.argv.slice(2);
  if (!port || !out) {
    throw new Error("usage: node chromium_har_recorder.js PORT OUT.har");
  }
  const site = `http://127.0.0.1:${port}`;
  const browser = await chromium.launch({
    executablePath: process.env.CHROMIUM || "/usr/bin/chromium",
    headless: true,
    // No update checks, sync or field trials: only the site's requests go out.
    args: ["--disable-background-networking", "--disable-component-update", "--no-first-run"],
  });
  try {
    const context = await browser.newContext({ recordHar: { path: out, content: "embed" } });
    const page = await context.newPage();
    page.setDefaultTimeout(10000);
    await page.goto(`${site}/login`, { waitUntil: "load" });
    await page.waitForTimeout(300); // the user reads, then types
    await page.fill("input[name=user]", "alice");
    await page.fill("input[name=password]", "s3cret");
    await Promise.all([page.waitForURL(`${site}/home`), page.click("button")]);
    await page.waitForLoadState("load");
    await page.waitForTimeout(300); // the user looks, then orders
    await page.click("#order");
    await page.waitForFunction(() => document.getElementById("done").textContent !== "");
    const done = await page.textContent("#done");
    if (!done.startsWith("paid ")) {
      throw new Error(`the shop did not accept the order: ${done}`);
    }
    // Closing the context writes the HAR.
    await context.close();
  } finally {
    await browser.close();
  }
}

main().catch((e) => {
  console.error(e && e.stack ? e.stack : String(e));
  process.exit(1);
});
