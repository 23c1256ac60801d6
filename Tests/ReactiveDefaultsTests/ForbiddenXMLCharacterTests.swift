import Foundation
import TestSupport
import Testing

@_spi(Tools) @testable import ReactiveDefaults

/// What happens to characters XML 1.0 forbids (documented in Gotchas): on Linux corelibs writes them raw, and the
/// library and corelibs read the file back whole.
@Suite struct ForbiddenXMLCharacterTests {
  @Test(.linuxOnly) func aStringWithCharactersXMLForbidsReadsBack() throws {
    let (store, issues) = makeStore()
    let text = "a\u{0}b\u{1B}c\u{8}d"
    let keyName = "escape\u{1B}key"
    let key = DefaultsKey<String>(keyName, default: "")
    store[key] = text
    try store.save()
    let bytes = try #require(suiteFileBytes(store.suiteName!))
    #expect(bytes.contains(0x1B) && bytes.contains(0))  // raw, as corelibs writes it
    let parsed = try SuiteFile.parseDomain(bytes)  // CoreFoundation's parser
    #expect(parsed[PropertyListKey(keyName)] == .string(text))
    #expect(store[key] == text)
    #expect(issues.values.isEmpty)
  }
}
