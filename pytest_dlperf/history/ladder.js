// The model page's ladder: throughput against devices for the run picked, beside another run, with
// the ideal line (the first rung's throughput per device times the devices). Data: LADDER, UNIT;
// the charts' configuration (nothing can be sent out) and fit to the legend: site.js's.
(function () {
  const line = document.getElementById("line");
  const runA = document.getElementById("run-a");
  const runB = document.getElementById("run-b");
  LADDER.forEach((l, i) => line.add(new Option(l.label, i)));

  function trace(run, colour, role) {
    return {
      type: "scatter", mode: "lines+markers", name: role + ": " + run.label, line: {color: colour},
      x: run.points.map(p => p.devices), y: run.points.map(p => p.median), text: run.points.map(p => p.topology),
      error_y: {type: "data", symmetric: false, array: run.points.map(p => p.high - p.median),
                arrayminus: run.points.map(p => p.median - p.low)},
      hovertemplate: "%{text}: %{y:.4g}<extra></extra>",
    };
  }

  function draw() {
    const runs = LADDER[line.value].runs;
    const picked = runs[runA.value];
    const traces = [trace(picked, "#1f77b4", "run")];
    if (Number(runB.value) >= 0) traces.push(trace(runs[runB.value], "#ff7f0e", "against"));
    const first = picked.points[0];
    const devices = [...new Set(runs.flatMap(r => r.points.map(p => p.devices)))].sort((a, b) => a - b);
    traces.push({type: "scatter", mode: "lines", name: "ideal (linear from " + first.topology + ")",
                 x: devices, y: devices.map(d => first.median / first.devices * d), line: {dash: "dot", color: "#555"}});
    Plotly.react("ladder", traces, {
      xaxis: {title: {text: "devices"}, type: "log", tickvals: devices, ticktext: devices.map(String)},
      yaxis: {title: {text: UNIT}}, legend: {orientation: "h", y: -0.25}, margin: {t: 30}},
      dlperfPlotConfig()).then(() => dlperfFit(document.getElementById("ladder")));
  }

  function fillRuns() {
    const runs = LADDER[line.value].runs;
    runA.innerHTML = "";
    runB.innerHTML = "";
    runs.forEach((r, i) => { runA.add(new Option(r.label, i)); runB.add(new Option(r.label, i)); });
    runB.add(new Option("(none)", -1));
    runB.value = runs.length > 1 ? 1 : -1;
    draw();
  }

  line.onchange = fillRuns;
  runA.onchange = draw;
  runB.onchange = draw;
  fillRuns();
})();
