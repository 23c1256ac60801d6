// Every Swift block of README.md, read from the README itself and compiled as a user would paste it: a program of its
// own (its `main.swift`) against the modules this test run built, or a `Package.swift` parsed by SwiftPM. The Rx blocks
// are compiled by ReactiveDefaultsRxTests, with their trait; the SwiftUI ones where SwiftUI exists.
import Foundation
import TestSupport
import Testing

@Suite struct ReadmeTests {
  @Test func everyBlockIsOfAKindATestCompiles() throws {
    let snippets = try ReadmeSnippet.all()
    // The example, the manifest, the Rx block (the rest is the articles', compiled by their own tests): a renamed
    // fence would check nothing.
    #expect(snippets.count >= 3, "\(snippets)")
    #expect(snippets.contains { $0.kind == .manifest })
    #expect(snippets.contains { $0.kind == .rx })
    #expect(snippets.contains { $0.kind == .program })
  }

  @Test func everyProgramTypeChecks() async throws {
    let programs = try ReadmeSnippet.all().filter { snippet in
      #if canImport(SwiftUI)
        snippet.kind == .program || snippet.kind == .swiftUI
      #else
        snippet.kind == .program
      #endif
    }
    for snippet in programs {
      let result = try await offThePool { try snippet.typeCheck() }
      #expect(result.status == 0, "\(snippet) does not compile as written:\n\(result.diagnostics)\n\(snippet.code)")
    }
  }

  @Test func theManifestParses() async throws {
    for snippet in try ReadmeSnippet.all() where snippet.kind == .manifest {
      let result = try await offThePool { try snippet.parseManifest() }
      #expect(result.status == 0, "\(snippet) is not a manifest SwiftPM reads:\n\(result.diagnostics)")
      #expect(result.diagnostics.contains("ReactiveDefaults"), "\(snippet) does not depend on the package")
    }
  }
}
