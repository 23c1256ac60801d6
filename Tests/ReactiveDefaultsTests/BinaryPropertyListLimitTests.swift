import Foundation
import Testing

@testable import ReactiveDefaults

@Suite struct BinaryPropertyListLimitTests {
  /// 300 bytes that expand to 4 million objects: refused after the reader's budget, not expanded.
  @Test func aReferenceBombIsRefused() {
    let bomb = HandMadeBinaryPlist.referenceBomb(levels: 22)
    #expect(bomb.count < 400)
    #expect(BinaryPropertyList.parse(bomb) == nil)
  }

  /// corelibs reads nesting up to 510 levels and refuses 512: so does the reader, without running out of stack.
  @Test(arguments: [70, 500])
  func deepButValidFilesAreRead(depth: Int) throws {
    let parsed = try #require(BinaryPropertyList.parse(HandMadeBinaryPlist.deepDomain(depth: depth)))
    guard case .dictionary(let root) = parsed else {
      Issue.record("not a dictionary")
      return
    }
    #expect(root["count"] == .integer(5))
  }

  @Test func nestingBeyondTheLimitIsRefusedWithoutCrashing() {
    #expect(BinaryPropertyList.parse(HandMadeBinaryPlist.deepDomain(depth: 100_000)) == nil)
  }
}
