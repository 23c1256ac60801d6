import Foundation
import TestSupport
import Testing

#if canImport(Glibc)
  import Glibc
#endif

/// A read changes nothing on disk, and nothing renames a file it may not own (issue 48: `rdefaults read --file` on a
/// FIFO, a device or a damaged file renamed the file it was asked to read, to `x.corrupt-size0-inode…`; as root on
/// `/dev/null` that breaks the machine). Only lock files may appear.
@Suite(.linuxOnly) struct ReadLeavesFilesTests {
  /// What the folder holds, lock files aside.
  private func listing(_ folder: String) throws -> [String] {
    try FileManager.default.contentsOfDirectory(atPath: folder).filter { !$0.hasSuffix(".lock") }.sorted()
  }

  /// A 216-byte binary plist whose objects share references 2^40 times over: the strict reader refuses it.
  private static let bomb: Data = {
    // bplist00, then 41 arrays, each holding the one before twice; the offset table and trailer after.
    var bytes = Array("bplist00".utf8)
    var offsets: [Int] = []
    offsets.append(bytes.count)
    bytes.append(0x50)  // object 0: an empty ASCII string
    for index in 1...40 {
      offsets.append(bytes.count)
      bytes += [0xA2, UInt8(index - 1), UInt8(index - 1)]  // an array of two references to the object before
    }
    let tableOffset = bytes.count
    for offset in offsets { bytes.append(UInt8(offset)) }
    // Trailer: 6 unused bytes, offset size 1, reference size 1, object count, top object, offset table's offset.
    bytes += [0, 0, 0, 0, 0, 0, 1, 1]
    bytes += withUnsafeBytes(of: UInt64(offsets.count).bigEndian, Array.init)
    bytes += withUnsafeBytes(of: UInt64(40).bigEndian, Array.init)
    bytes += withUnsafeBytes(of: UInt64(tableOffset).bigEndian, Array.init)
    return Data(bytes)
  }()

  enum Kind: String, CaseIterable, Sendable {
    case fifo, damaged, bomb
  }

  @Test(arguments: Kind.allCases) func readingAFileStoreLeavesTheFolderAsItWas(_ kind: Kind) async throws {
    let folder = makeConfigFolder()
    defer { try? FileManager.default.removeItem(atPath: folder) }
    let path = folder + "/x.plist"
    switch kind {
    case .fifo: try #require(mkfifo(path, 0o600) == 0)
    case .damaged: try Data("not a property list".utf8).write(to: URL(fileURLWithPath: path))
    case .bomb: try Self.bomb.write(to: URL(fileURLWithPath: path))
    }
    let before = try listing(folder)
    for command in [["read", "--file", path], ["read", "--file", path, "k"], ["export", "--file", path, "-"]] {
      let result = try await runTool(command, config: makeConfigFolder())
      #expect(result.status == 1, "\(command): \(result.status) \(result.error)")
      #expect(try listing(folder) == before, "\(command)")
    }
    var info = stat()
    #expect(lstat(path, &info) == 0)
    #expect((info.st_mode & S_IFMT) == (kind == .fifo ? S_IFIFO : S_IFREG))
    if kind == .fifo {
      // A write never replaces a FIFO either: it fails, and the FIFO stays.
      let written = try await runTool(["write", "--file", path, "k", "v"], config: makeConfigFolder())
      #expect(written.status == 1)
      #expect(written.error.contains("is a FIFO, not a file"), "\(written.error)")
      #expect(try listing(folder) == before)
    }
  }
}
