// Prints what a make target produced, in a few lines: the resources of each synthesized template
// (`templates DIR`) or the URL and endpoint of a deployment (`outputs FILE`, cdk deploy's --outputs-file).
import * as fs from 'fs';
import * as path from 'path';

const [what, where] = process.argv.slice(2);

if (what === 'templates') {
  for (const file of fs.readdirSync(where).filter((f) => f.endsWith('.template.json')).sort()) {
    const template = JSON.parse(fs.readFileSync(path.join(where, file), 'utf8'));
    const types = Object.values(template.Resources as Record<string, { Type: string }>).map((r) => r.Type.replace(/^AWS::/, ''));
    console.log(`    ${path.basename(file, '.template.json')}: ${types.length} resources: ${types.join(', ')}`);
  }
} else if (what === 'outputs') {
  const outputs = JSON.parse(fs.readFileSync(where, 'utf8')) as Record<string, Record<string, string>>;
  for (const [stack, values] of Object.entries(outputs)) {
    for (const key of ['FunctionUrl', 'AuthType', 'EndpointName']) {
      if (values[key] !== undefined) console.log(`    ${stack} ${key}: ${values[key]}`);
    }
  }
} else {
  console.error('usage: report.ts templates DIR | outputs FILE');
  process.exit(2);
}
