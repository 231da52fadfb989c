import Foundation

// Hot-path microbenchmarks. Run: swift run -c release HotPathBench [--quick] [--json] [--only KEY,…]
// --quick: few samples and a 1,000-object scope (a seconds-long smoke run, also in debug builds);
// --json: one JSON object on stdout instead of the Markdown table; --only: keys or key prefixes
// (e.g. `http1.parse,sse`). Progress goes to stderr. Figures are printed, never asserted.

let arguments = Array(CommandLine.arguments.dropFirst())
var quick = false
var asJSON = false
var only: [String] = []
var index = 0
while index < arguments.count {
    switch arguments[index] {
    case "--quick": quick = true
    case "--json": asJSON = true
    case "--only" where index + 1 < arguments.count:
        index += 1
        only = arguments[index].split(separator: ",").map(String.init)
    case "-h", "--help":
        print("usage: HotPathBench [--quick] [--json] [--only KEY[,KEY…]]")
        exit(0)
    default:
        FileHandle.standardError.write(Data("HotPathBench: unknown argument \(arguments[index])\n".utf8))
        exit(2)
    }
    index += 1
}

let sampler = quick ? Sampler.quick : Sampler.full
let scopeObjects = quick ? 1_000 : 10_000
FileHandle.standardError.write(Data("building a \(scopeObjects)-object scope…\n".utf8))
let model = ModelWorkloads(objects: scopeObjects)
let benchmarks =
    HTTP1Workloads.benchmarks() + model.benchmarks() + SSEWorkloads.benchmarks(model: model)
    + ResponseWorkloads.benchmarks()
let selected = benchmarks.filter { benchmark in only.isEmpty || only.contains { benchmark.name.hasPrefix($0) } }
guard !selected.isEmpty else {
    FileHandle.standardError.write(Data("HotPathBench: --only matched nothing\n".utf8))
    exit(2)
}
var results: [MicroResult] = []
for benchmark in selected {
    FileHandle.standardError.write(Data("\(benchmark.name)…\n".utf8))
    results.append(sampler.run(benchmark))
}
let objects = model.scopeObjects
print(
    asJSON
        ? Report.json(results, quick: quick, scopeObjects: objects)
        : Report.markdown(results, quick: quick, scopeObjects: objects))
