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
