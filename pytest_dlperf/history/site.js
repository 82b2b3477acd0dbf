// The site's script (docs/history.md). Every chart is drawn with one configuration that offers no way
// to send it anywhere: plotly.js's "Share" (send-to-cloud) button is on by default and uploads the
// chart, commits, machine names, messages and all, to a cloud service; it is off here, as is the
// logo's link. The pages load nothing but the site's own files: the "download as PNG" button, which
// loads the chart back as a blob: image, is left out too (a screenshot, or the run's plots/*.png).
// A click on a run's point opens that run's page. On the index, the filter box and the verdict list
// show only the rows that match, on this page and with no request of any kind.
(function () {
  "use strict";
  const CONFIG = {
    responsive: true, displaylogo: false, showSendToCloud: false, plotlyServerURL: "", showTips: false,
    modeBarButtonsToRemove: ["sendChartToCloud", "sendDataToCloud", "editInChartStudio", "toImage"],
  };
  window.dlperfPlotConfig = function () { return Object.assign({}, CONFIG); };

  // A chart grows with its legend (below it, in as many rows as the width needs) rather than let the
  // legend squeeze its plot: about PLOT px of plot, and whatever the legend takes. The style's height
  // fits one line's legend at a desk's width, so most charts are drawn once.
  const PLOT = 300;
  function fit(div, tries) {
    const plot = div.querySelector(".nsewdrag");
    if (!plot || tries === 0) return Promise.resolve();
    const has = plot.getBoundingClientRect().height;
    if (has >= PLOT - 30 && has <= PLOT + 40) return Promise.resolve();
    const want = Math.round(div.getBoundingClientRect().height - has + PLOT);
    div.style.height = want + "px";  // the legend may take other rows at the new size: again, at most 3 times
    return Plotly.Plots.resize(div).then(function () { return fit(div, (tries || 3) - 1); });
  }

  // A chart; a point whose customdata is a run's page opens it when clicked.
  window.dlperfPlot = function (id, data, layout) {
    const div = document.getElementById(id);
    return Plotly.newPlot(div, data, layout, window.dlperfPlotConfig()).then(function () {
      div.on("plotly_click", function (ev) {
        const p = ev && ev.points && ev.points[0];
        if (p && typeof p.customdata === "string" && p.customdata) window.location.href = p.customdata;
      });
      return window.dlperfFit(div);
    });
  };

  // Fit a drawn chart to its legend, then mark it drawn (tests wait for the mark).
  window.dlperfFit = function (div) {
    div.removeAttribute("data-drawn");
    div.dataset.width = div.clientWidth;
    return fit(div).then(function () { div.setAttribute("data-drawn", ""); });
  };
  window.addEventListener("resize", function () {  // a chart whose width changed: its legend may take other rows
    document.querySelectorAll(".chart.js-plotly-plot[data-drawn]").forEach(function (div) {
      if (String(div.clientWidth) === div.dataset.width) return;
      div.removeAttribute("data-drawn");
      setTimeout(function () { window.dlperfFit(div); }, 150);  // after plotly's own resize
    });
  });

  // The index's filter: every row with data-search is shown when each word typed is in its text and
  // the verdict picked (if any) is among its data-verdicts; each table says how many rows it shows.
  function filter() {
    const box = document.getElementById("filter");
    const pick = document.getElementById("verdict-filter");
    const words = box.value.toLowerCase().split(/\s+/).filter(Boolean);
    const verdict = pick ? pick.value : "";
    document.querySelectorAll("table.filterable").forEach(function (table) {
      let shown = 0;
      const rows = table.querySelectorAll("tbody tr[data-search]");
      rows.forEach(function (row) {
        const text = row.getAttribute("data-search");
        const ok = words.every(function (w) { return text.indexOf(w) >= 0; }) &&
          (!verdict || (" " + (row.getAttribute("data-verdicts") || "") + " ").indexOf(" " + verdict + " ") >= 0);
        row.hidden = !ok;
        if (ok) shown += 1;
      });
      const count = document.getElementById(table.id + "-count");
      if (count) count.textContent = shown === rows.length ? "" : "(" + shown + " of " + rows.length + " shown)";
    });
  }

  document.addEventListener("DOMContentLoaded", function () {
    const box = document.getElementById("filter");
    if (!box) return;
    box.addEventListener("input", filter);
    const pick = document.getElementById("verdict-filter");
    if (pick) pick.addEventListener("change", filter);
    filter();
  });
})();
