import Foundation
import TestSupport
import Testing

#if canImport(Glibc)
  import Glibc
#endif

#if os(Linux)  // mount(2) and umount(2) as Linux has them
  /// Whether this process may mount a tmpfs (root with the capability): the disk-full test needs a small disk.
  private let canMountSmallDisk: Bool = {
    let probe = NSTemporaryDirectory() + "rdefaults-mount-probe-" + UUID().uuidString
    guard (try? FileManager.default.createDirectory(atPath: probe, withIntermediateDirectories: true)) != nil else {
      return false
    }
    defer { try? FileManager.default.removeItem(atPath: probe) }
    guard mount("tmpfs", probe, "tmpfs", 0, "size=64k") == 0 else { return false }
    umount(probe)
    return true
  }()

  @Suite(.linuxOnly) struct FullDiskTests {
    /// A real full disk (a 64 KiB tmpfs): the save fails with "No space left on device", the file is byte for byte as
    /// it was, nothing is left behind, and the next save after space is freed writes the value.
    @Test(.enabled(if: canMountSmallDisk, "needs root and mount(2) to make a 64 KiB tmpfs"))
    func aFullDiskFailsTheSaveAndKeepsTheFile() async throws {
      let config = makeConfigFolder()
      try #require(mount("tmpfs", config, "tmpfs", 0, "size=64k") == 0)
      defer { umount(config) }
      try await runTool(["write", "d", "k", "-string", "small"], config: config)
      let path = config + "/d.plist"
      let before = try Data(contentsOf: URL(fileURLWithPath: path))
      // Fill the disk.
      let filler = config + "/filler"
      let descriptor = open(filler, O_WRONLY | O_CREAT, 0o600)
      try #require(descriptor >= 0)
      let block = [UInt8](repeating: 0, count: 1024)
      while block.withUnsafeBytes({ write(descriptor, $0.baseAddress, $0.count) }) > 0 {}
      close(descriptor)
      let big = String(repeating: "y", count: 8192)
      let failed = try await runTool(["write", "d", "k", "-string", big], config: config)
      #expect(failed.status == 1)
      #expect(failed.error.contains("No space left on device"), "\(failed.error)")
      #expect(try Data(contentsOf: URL(fileURLWithPath: path)) == before, "the failed save changed the file")
      let leftovers = try FileManager.default.contentsOfDirectory(atPath: config).filter {
        $0.contains("journal") || $0.contains("tmp-")
      }
      #expect(leftovers.isEmpty, "\(leftovers)")
      try FileManager.default.removeItem(atPath: filler)
      #expect(try await runTool(["write", "d", "k", "-string", big], config: config).status == 0)
      #expect(try await runTool(["read", "d", "k"], config: config).output == big + "\n")
    }
  }
#endif
