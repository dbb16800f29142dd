// Prints the functions (declarations, methods, arrows, function expressions, accessors,
// constructors) longer than a limit, with their line counts, for the project's TypeScript files
// under the given folders. A function's length is its lines from its first to its last, nested
// functions included. Exit status 1 when any is over the limit. It parses with the project's
// own compiler (TypeScript 7's API over tsconfig.json).
//
//   node --import tsx scripts/function-lengths.ts [--max 120] [folder ...]   (default: src)
import { resolve } from "node:path";
import { SyntaxKind, type Node, type SourceFile } from "typescript/unstable/ast";
import { API } from "typescript/unstable/sync";

const FUNCTION_KINDS = new Set<SyntaxKind>([
  SyntaxKind.FunctionDeclaration,
  SyntaxKind.FunctionExpression,
  SyntaxKind.ArrowFunction,
  SyntaxKind.MethodDeclaration,
  SyntaxKind.Constructor,
  SyntaxKind.GetAccessor,
  SyntaxKind.SetAccessor,
]);
/** Declarations whose name a function expression or arrow takes. */
const NAMING_KINDS = new Set<SyntaxKind>([SyntaxKind.VariableDeclaration, SyntaxKind.PropertyAssignment, SyntaxKind.PropertyDeclaration]);

const args = process.argv.slice(2);
const maxAt = args.indexOf("--max");
const max = maxAt >= 0 ? Number(args[maxAt + 1]) : 120;
const folders = args.filter((_, i) => maxAt < 0 || (i !== maxAt && i !== maxAt + 1)).map((f) => resolve(f));
if (folders.length === 0) folders.push(resolve("src"));

function nameOf(node: Node, source: SourceFile): string {
  const named = node as Node & { name?: Node };
  if (named.name) return named.name.getText(source);
  if (node.kind === SyntaxKind.Constructor) return "constructor";
  const parent = node.parent as (Node & { name?: Node }) | undefined;
  if (parent && NAMING_KINDS.has(parent.kind) && parent.name) return parent.name.getText(source);
  return "(anonymous)";
}

const api = new API({ cwd: process.cwd() });
let over = 0;
try {
  const project = api.updateSnapshot({ openProject: resolve("tsconfig.json") }).getProjects()[0]!;
  const files = project.program.getSourceFileNames().filter((f) => folders.some((d) => f === d || f.startsWith(`${d}/`)));
  for (const file of files) {
    const source = project.program.getSourceFile(file)!;
    const lineOf = (pos: number) => source.getLineAndCharacterOfPosition(pos).line;
    const visit = (node: Node): void => {
      if (FUNCTION_KINDS.has(node.kind) && (node as Node & { body?: Node }).body) {
        const first = lineOf(node.getStart(source));
        const lines = lineOf(node.end) - first + 1;
        if (lines > max) {
          over++;
          console.log(`${file}:${first + 1}\t${lines} lines\t${nameOf(node, source)}`);
        }
      }
      node.forEachChild(visit);
    };
    visit(source);
  }
  console.log(`${files.length} files: ${over ? `${over} function(s) over ${max} lines` : `no function over ${max} lines`}`);
} finally {
  api.close();
}
process.exitCode = over ? 1 : 0;
