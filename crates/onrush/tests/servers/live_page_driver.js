// A real Chromium (Debian's /usr/bin/chromium, driven by playwright-core) uses onrush's live
// page as a user would, while the run goes: waits for it to draw, sets a scenario's rate in its
// form, pauses and resumes with its buttons, stops the run with the stop button (two clicks),
// and waits for the page to become the final report. A screenshot at three moments.
//
// usage: node live_page_driver.js URL SCREENSHOT_DIR
// prints one JSON line: what the page showed at each moment (the test compares it with the
// results files).
"use strict";

const { chromium } = require("playwright-core");

async function main() {
  const [url, shots] = process.argv.slice(2);
  if (!url || !shots) {
    throw new Error("usage: node live_page_driver.js URL SCREENSHOT_DIR");
  }
  const browser = await chromium.launch({
    executablePath: process.env.CHROMIUM || "/usr/bin/chromium",
    headless: true,
    args: ["--disable-background-networking", "--disable-component-update", "--no-first-run"],
  });
  const seen = {};
  try {
    const page = await browser.newPage({ viewport: { width: 1280, height: 1600 } });
    page.setDefaultTimeout(20000);
    const errors = [];
    page.on("pageerror", (e) => errors.push(String(e)));
    await page.goto(url, { waitUntil: "load" });
    // The first second closes, the page reloads itself into the live report.
    await page.waitForSelector("#live-state[data-state=running]");
    await page.waitForFunction(() => {
      const s = document.getElementById("onrush-report-status");
      return s && s.getAttribute("data-done") === "1";
    });
    const state = () =>
      page.evaluate(() => {
        const s = document.getElementById("live-state");
        return {
          state: s.getAttribute("data-state"),
          requests: Number(s.getAttribute("data-requests")),
          second: Number(s.getAttribute("data-second")),
          chart_seconds: window.onrushCharts ? window.onrushCharts.seconds() : -1,
        };
      });
    // Charts grow as seconds close.
    const first = await state();
    await page.waitForFunction(
      (n) => window.onrushCharts.seconds() >= n + 2,
      first.chart_seconds
    );
    seen.start = first;
    seen.grown = await state();
    await page.screenshot({ path: `${shots}/1-running.png`, fullPage: true });

    await page.fill("#live-set-browse", "200/s");
    await page.click("#live-apply-browse");
    await page.waitForFunction(() =>
      /rate set to 200\/s/.test(document.querySelector(".live-load").textContent)
    );
    seen.note_after_rate = await page.textContent("#live-note");
    // The marker of the change is drawn once its second is in the charts.
    await page.waitForTimeout(2500);
    await page.screenshot({ path: `${shots}/2-rate-changed.png`, fullPage: true });

    await page.click("#live-pause");
    await page.waitForSelector("#live-state[data-state=paused]");
    seen.paused = await state();
    await page.waitForTimeout(1500);
    await page.click("#live-resume");
    await page.waitForSelector("#live-state[data-state=running]");

    await page.click("#live-stop");
    await page.click("#live-stop");
    // The run stops, writes its results, and the page reloads into the final report.
    await page.waitForFunction(
      () => !document.getElementById("live") && document.getElementById("key-figures"),
      null,
      { timeout: 30000 }
    );
    await page.waitForFunction(() => {
      const s = document.getElementById("onrush-report-status");
      return s && s.getAttribute("data-done") === "1";
    });
    seen.final_cards = await page.evaluate(() => {
      const out = {};
      document.querySelectorAll("#key-figures .card").forEach((c) => {
        out[c.querySelector(".label").textContent] = c.querySelector(".value").textContent;
      });
      return out;
    });
    seen.final_events = await page.evaluate(() =>
      Array.from(document.querySelectorAll("#events tbody tr")).map((r) => r.children[1].textContent)
    );
    seen.final_report_errors = await page.getAttribute("#onrush-report-status", "data-errors");
    await page.screenshot({ path: `${shots}/3-final-report.png`, fullPage: true });
    seen.page_errors = errors;
  } finally {
    await browser.close();
  }
  console.log(JSON.stringify(seen));
}

main().catch((e) => {
  console.error(e && e.stack ? e.stack : String(e));
  process.exit(1);
});
