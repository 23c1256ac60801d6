import Foundation
import TestSupport
import Testing

@_spi(Tools) @testable import ReactiveDefaults
@testable import ReactiveDefaultsCLI

private let precomposed = "caf\u{E9}"
private let decomposed = "cafe\u{301}"

/// The tool keeps two keys that differ only by Unicode normalization apart, and says clearly what is wrong with
/// what it is given.
@Suite(.linuxOnly) struct KeyNameToolTests {
  @Test func importReadExportFindAndRenameKeepBothSpellings() async throws {
    let config = makeConfigFolder()
    let input = NSTemporaryDirectory() + "both-\(UUID().uuidString).plist"  // outside the folder: not a domain
    defer { try? FileManager.default.removeItem(atPath: input) }
    try handWrittenPlist([(precomposed, "NFC"), (decomposed, "NFD"), ("a", "A")]).write(
      to: URL(fileURLWithPath: input))
    let imported = try await runTool(["import", "d", input], config: config)
    #expect(imported.status == 0, "\(imported.error)")
    let file = try Data(contentsOf: URL(fileURLWithPath: config + "/d.plist"))
    #expect(rawPlist(file, holds: precomposed, "NFC") && rawPlist(file, holds: decomposed, "NFD"))

    // The listing shows both, each escaped so that they read differently.
    let listing = try await runTool(["read", "d"], config: config)
    #expect(listing.output.contains(#""caf\U00e9" = NFC;"#), "\(listing.output)")
    #expect(listing.output.contains(#""cafe\U0301" = NFD;"#), "\(listing.output)")
    #expect(try await runTool(["read", "d", decomposed], config: config).output == "NFD\n")
    #expect(try await runTool(["read", "d", precomposed], config: config).output == "NFC\n")

    let exported = try await runTool(["export", "d", "-"], config: config)
    #expect(rawPlist(Data(exported.output.utf8), holds: precomposed, "NFC"))
    #expect(rawPlist(Data(exported.output.utf8), holds: decomposed, "NFD"))

    let found = try await runTool(["find", "caf"], config: config)
    #expect(found.output.hasPrefix("Found 2 keys in domain 'd'"), "\(found.output)")

    let renamed = try await runTool(["rename", "d", decomposed, precomposed + "2"], config: config)
    #expect(renamed.status == 0, "\(renamed.error)")
    let after = try Data(contentsOf: URL(fileURLWithPath: config + "/d.plist"))
    #expect(rawPlist(after, holds: precomposed, "NFC") && rawPlist(after, holds: precomposed + "2", "NFD"))
    #expect(!rawPlist(after, holds: decomposed, "NFD"))
    // Renaming one spelling to the other moves the value.
    let respelled = try await runTool(["rename", "d", precomposed, decomposed], config: config)
    #expect(respelled.status == 0, "\(respelled.error)")
    let last = try Data(contentsOf: URL(fileURLWithPath: config + "/d.plist"))
    #expect(rawPlist(last, holds: decomposed, "NFC") && !rawPlist(last, holds: precomposed, "NFC"))
  }

  /// An import names its input and says what an import needs; nothing is imported.
  @Test(arguments: [
    ("array", Data("<plist version=\"1.0\"><array><string>x</string></array></plist>".utf8), "holds an Array"),
    ("empty", Data(), "is empty"),
    ("cut", handWrittenPlist([("a", "A")]).prefix(120), "is not a property list"),
    (
      "deep",
      Data(
        ("<plist version=\"1.0\"><dict><key>k</key>" + String(repeating: "<array>", count: 600)
          + String(repeating: "</array>", count: 600) + "</dict></plist>").utf8), "is not a property list"
    ),
  ])
  func importErrorsNameTheFileAndWhatAnImportNeeds(label: String, contents: Data, reason: String) async throws {
    let config = makeConfigFolder()
    let path = config + "/\(label).plist"
    try contents.write(to: URL(fileURLWithPath: path))
    let result = try await runTool(["import", "d", path], config: config)
    #expect(result.status == 1)
    #expect(result.error.hasPrefix("Error: '\(path)' cannot be imported: it \(reason)"), "\(result.error)")
    #expect(result.error.contains("Hint: An import needs a property list"), "\(result.error)")
    #expect(!FileManager.default.fileExists(atPath: config + "/d.plist"))
  }

  @Test func importAndExportNameAMissingOrUnusablePath() async throws {
    let config = makeConfigFolder()
    let missing = try await runTool(["import", "d", config + "/nothing.plist"], config: config)
    #expect(missing.status == 1)
    #expect(missing.error.contains("No such file or directory"), "\(missing.error)")
    let folder = try await runTool(["import", "d", config], config: config)
    #expect(folder.status == 1)
    #expect(folder.error.contains("Is a directory"), "\(folder.error)")
    _ = try await runTool(["write", "d", "k", "v"], config: config)
    let empty = try await runTool(["export", "d", ""], config: config)
    #expect(empty.status == 64)
    #expect(empty.error.hasPrefix("Error: the file name is empty"), "\(empty.error)")
    let emptyImport = try await runTool(["import", "d", ""], config: config)
    #expect(emptyImport.status == 64)
    let intoFolder = try await runTool(["export", "d", config], config: config)
    #expect(intoFolder.status == 1)
    #expect(intoFolder.error.contains("it is a folder"), "\(intoFolder.error)")
    let noFolder = try await runTool(["export", "d", config + "/no/such/out.plist"], config: config)
    #expect(noFolder.status == 1)
    #expect(!noFolder.error.contains("NSCocoaErrorDomain"), "\(noFolder.error)")
    #expect(noFolder.error.contains("No such file or directory"), "\(noFolder.error)")
  }

  /// Every command, given what a user can mistype (nothing, empty words, missing domains, too many words, an
  /// unknown option): each `Error:` line says something whole, with no empty placeholder.
  @Test func noErrorMessageHasAnEmptyPlaceholder() async throws {
    let config = makeConfigFolder()
    _ = try await runTool(["write", "d", "k", "v"], config: config)
    var lines: [(arguments: [String], line: String)] = []
    for command in Help.commands.map(\.name) {
      var variants: [[String]] = [[], [""], ["--bogus"]]
      if command != "watch" && command != "demo" {
        variants += [
          ["", ""], ["", "", ""], ["d", ""], ["d", "k", ""], ["d", "", "v"], ["missing.domain"],
          ["missing.domain", "k"], ["d", config + "/missing.key"], ["d", "k", "v", "extra", "extra"],
        ]
      }
      for variant in variants {
        let arguments = [command] + variant
        let result = try await runTool(arguments, config: config)
        for line in result.error.split(separator: "\n") where line.hasPrefix("Error:") {
          lines.append((arguments, String(line)))
        }
      }
    }
    #expect(lines.count > 30)
    for (arguments, line) in lines {
      let problems = ["''", "  ", " .", " ,", " :", "NSCocoaErrorDomain", "Optional(", "nil", "()"].filter {
        line.contains($0)
      }
      #expect(problems.isEmpty, "rdefaults \(arguments): \(line)")
    }
  }

  /// The library's errors, as the tool prints them, in the forms that can arise: none has an empty placeholder.
  @Test func noLibraryErrorHasAnEmptyPlaceholder() {
    let errors: [DefaultsError] = [
      .typeMismatch(key: "k", expected: "Int", found: "String"),
      .encodingFailed(key: "k", type: "Layout", reason: "NaN has no JSON form"),
      .invalidKey(""),
      .unreadableFile(path: "", reason: "holds an Array, not a dictionary", backup: nil),
      .unreadableFile(path: "/p/d.plist", reason: "is empty", backup: "/p/d.plist.corrupt-1"),
      .saveFailed(path: "", reason: "No space left on device"),
      .saveFailed(path: "/p/d.plist", reason: "No space left on device"),
      .reentrantEdit(suite: "d"),
      .migrationFailed(step: "", key: DefaultsStore.migrationsKey, reason: "holds Integer, not an array of strings"),
      .migrationFailed(step: "rename a to b", key: nil, reason: "failed"),
    ]
    for error in errors {
      let text = error.description
      #expect(!text.contains("''") && !text.contains("  ") && !text.contains(" ."), "\(text)")
    }
  }
}
