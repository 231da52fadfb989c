import ArgumentParser
import Foundation
import GatewayServer
import Store

/// `jetstream backup --data-dir D FILE`: a consistent copy of the embedded store while the gateway
/// on D serves it and takes writes (`SQLiteBackup`, docs/backups.md).
struct BackupCommand: ParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "backup",
        abstract: "Copy the embedded store of a data directory to FILE, consistently, while it is served.",
        discussion: """
            Needs no downtime and no lock: the copy is the store as it was at one instant, every \
            scope at the version printed. FILE is one SQLite file; `jetstream restore FILE \
            --data-dir D2` makes a data directory of it. Prints `NAME VERSION` per live scope and \
            a summary line, or with --json one object {"file", "scopes": [{"name", "version"}]}. \
            Exit status 1 with the reason on stderr when nothing was written. A gateway on \
            PostgreSQL (--database-url) is backed up with pg_dump instead (docs/backups.md).
            """)

    @Option(help: "Data directory of the store to copy (as given to `jetstream serve`). [JETSTREAM_DATA_DIR]")
    var dataDir = EnvironmentDefault.value("JETSTREAM_DATA_DIR", "./jetstream-data")
    @Flag(help: "Replace FILE if it exists.") var force = false
    @Flag(help: "Print one JSON object instead of lines.") var json = false
    @Argument(help: "The backup file to write (its directory must exist).") var file: String

    func run() throws {
        let storePath = GatewayServerConfiguration(dataDirectory: dataDir).storePath
        var isDirectory: ObjCBool = false
        guard FileManager.default.fileExists(atPath: dataDir, isDirectory: &isDirectory), isDirectory.boolValue
        else {
            Self.fail(
                "the data directory \(dataDir) does not exist: give --data-dir the directory `jetstream serve` uses")
        }
        do throws(SQLiteBackupError) {
            let backup = try SQLiteBackup.copy(store: storePath, to: file, replacing: force)
            Self.report(backup, json: json, summary: "backup of \(backup.scopes.count) scopes written to \(file)")
        } catch .storeMissing {
            Self.fail(
                "\(dataDir) holds no store (no \((storePath as NSString).lastPathComponent)): give --data-dir the "
                    + "directory `jetstream serve --data-dir` uses; a gateway on PostgreSQL (--database-url) is "
                    + "backed up with pg_dump (docs/backups.md)")
        } catch .destinationExists(let path) {
            Self.fail("\(path) exists already: choose another name, or pass --force to replace it")
        } catch .notAStore(let path, let message) {
            Self.fail("\(path) is not a Jetstream store: \(message); nothing was written")
        } catch {
            Self.fail("\(error); nothing was written to \(file)")
        }
    }

    /// `NAME VERSION` per scope and the summary, or one JSON object with `--json`.
    static func report(_ backup: SQLiteBackup, json: Bool, summary: String) {
        if json {
            let encoder = JSONEncoder()
            encoder.outputFormatting = [.sortedKeys, .withoutEscapingSlashes]
            let document = Document(
                file: backup.file, scopes: backup.scopes.map { Document.Scope(name: $0.name, version: $0.version) })
            // Encoding strings and integers cannot fail.
            print(String(decoding: (try? encoder.encode(document)) ?? Data(), as: UTF8.self))
        } else {
            for scope in backup.scopes { print("\(scope.name) \(scope.version)") }
            print("\(summary) (\(backup.bytes) bytes)")
        }
    }

    /// Writes `jetstream <command>: message` to stderr and exits with status 1.
    static func fail(_ message: String, command: String = "backup") -> Never {
        FileHandle.standardError.write(Data("jetstream \(command): \(message)\n".utf8))
        Foundation.exit(1)
    }

    /// The `--json` output.
    private struct Document: Encodable {
        struct Scope: Encodable {
            let name: String
            let version: Int64
        }

        let file: String
        let scopes: [Scope]
    }
}
