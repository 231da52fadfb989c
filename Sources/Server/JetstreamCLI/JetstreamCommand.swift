import ArgumentParser
import Foundation
import JetstreamModel

/// The `jetstream` command: serves scopes over HTTP, checks schema files and load-tests a server.
@main
struct JetstreamCommand: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "jetstream",
        abstract: "Jetstream Gateway: shared model scopes kept in sync over HTTP and Server-Sent Events.",
        subcommands: [
            ServeCommand.self, CheckSchemaCommand.self, BenchCommand.self, BackupCommand.self, RestoreCommand.self,
        ],
        defaultSubcommand: ServeCommand.self)
}

/// `jetstream check-schema FILE`: validates a schema file the way `serve --schema` loads it.
struct CheckSchemaCommand: ParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "check-schema", abstract: "Validate a model schema file (YAML or JSON).")

    @Argument(help: "The schema file.") var file: String

    func run() throws {
        do {
            let schema = try Schema.load(from: URL(fileURLWithPath: file))
            print("\(file): ok — \(schema.classes.count) classes, \(schema.scopes.count) scope rules")
        } catch {
            FileHandle.standardError.write(Data("\(error)\n".utf8))
            throw ExitCode(1)
        }
    }
}
