import Foundation

/// Command-line options of StoreBench.
struct Options {
    var seconds = 5.0
    var records = 1_000_000
    var directory = FileManager.default.temporaryDirectory.path

    init(_ arguments: [String]) {
        var iterator = arguments.dropFirst().makeIterator()
        while let flag = iterator.next() {
            let value = iterator.next() ?? ""
            switch flag {
            case "--seconds": seconds = Double(value) ?? seconds
            case "--records": records = Int(value) ?? records
            case "--dir": directory = value
            default:
                print("unknown option \(flag); usage: StoreBench [--seconds S] [--records N] [--dir PATH]")
                exit(2)
            }
        }
    }
}
