import Dispatch
import Foundation
@_spi(Tools) import ReactiveDefaults
import Synchronization

#if canImport(Glibc)
  import Glibc
#endif

/// From the moment a child process's save of a new value is complete on disk to the observer callback here.
///
/// Both ends read the one clock every process shares (`CLOCK_MONOTONIC`): the child reports the time its save's rename
/// returned (the library records it: ``DefaultsStore/lastSaveCommittedNanoseconds``), not the time its `flush()`
/// returned, which also waits for the folder's `fsync` after the file's lock is released, so the observer here could
/// run before it and a latency came out negative.
enum CrossProcess {
  static let key = DefaultsKey<Int>("value", default: 0)

  /// The child: writes each number read from stdin, saves, and answers with the time that save was complete on disk
  /// (`file`: the target is a file store's path).
  static func runChild(suite: String, file: Bool = false) -> Never {
    let store = file ? DefaultsStore(fileURL: URL(fileURLWithPath: suite))! : DefaultsStore(suiteName: suite)!
    while let line = readLine() {
      guard let value = Int(line) else { break }
      store[key] = value
      store.flush()
      // Where the library does not write the file itself (a suite on Apple platforms, written by the preferences
      // daemon), the moment `flush()` returned.
      let committed = store.lastSaveCommittedNanoseconds ?? now()
      FileHandle.standardOutput.write(Data("\(committed)\n".utf8))
    }
    exit(0)
  }

  /// The monotonic clock every process shares, in nanoseconds (the one the library stamps saves with).
  static func now() -> UInt64 {
    var time = timespec()
    clock_gettime(CLOCK_MONOTONIC, &time)
    return UInt64(time.tv_sec) &* 1_000_000_000 &+ UInt64(time.tv_nsec)
  }

  /// Latencies in milliseconds: until the observer callback here (`observed`), or until a store with no observer,
  /// read in a tight loop on a thread of its own, first returns the new value.
  /// With `fileStore`, the child saves a file store, and the store here is one over the same file.
  static func measure(samples: Int, observed: Bool = true, fileStore: Bool = false) throws -> [Double] {
    let suite =
      fileStore ? scratchFile("cross-process") : scratchSuite(observed ? "cross-process" : "cross-process-unobserved")
    defer { fileStore ? cleanUpFile(suite) : cleanUp(suite) }
    let store = fileStore ? DefaultsStore(fileURL: URL(fileURLWithPath: suite))! : DefaultsStore(suiteName: suite)!
    let arrivals = Mutex<[Int: UInt64]>([:])
    let arrived = DispatchSemaphore(value: 0)
    let reading = Atomic<Bool>(true)
    let token: DefaultsObservation?
    if observed {
      token = store.property(key).observe(initial: false) { value in
        let now = CrossProcess.now()
        arrivals.withLock { $0[value] = now }
        arrived.signal()
      }
    } else {
      token = nil
      Thread {
        var last = 0
        while reading.load(ordering: .relaxed) {
          let value = store[key]
          guard value != last else { continue }
          let now = CrossProcess.now()
          last = value
          arrivals.withLock { $0[value] = now }
          arrived.signal()
        }
      }.start()
    }
    defer {
      token?.cancel()
      reading.store(false, ordering: .relaxed)
    }

    let child = Process()
    child.executableURL = URL(fileURLWithPath: try executablePath())
    child.arguments = [fileStore ? "--file-child" : "--child", suite]
    let input = Pipe()
    let output = Pipe()
    child.standardInput = input
    child.standardOutput = output
    try child.run()
    defer {
      try? input.fileHandleForWriting.close()
      child.waitUntilExit()
    }
    let reader = LineReader(output.fileHandleForReading.fileDescriptor)
    var latencies: [Double] = []
    for sample in 1...samples {
      input.fileHandleForWriting.write(Data("\(sample)\n".utf8))
      guard let line = reader.next(), let saved = UInt64(line) else { throw BenchmarkError("the child stopped") }
      let deadline = DispatchTime.now() + 5
      while arrivals.withLock({ $0[sample] == nil }) {
        guard arrived.wait(timeout: deadline) == .success else {
          throw BenchmarkError("sample \(sample) never arrived")
        }
      }
      let callback = arrivals.withLock { $0[sample]! }
      latencies.append((Double(callback) - Double(saved)) / 1e6)
    }
    return latencies
  }
}

struct BenchmarkError: Error, CustomStringConvertible {
  var description: String
  init(_ description: String) { self.description = description }
}

/// Reads lines from a descriptor without buffering past them.
final class LineReader {
  private let descriptor: Int32
  init(_ descriptor: Int32) { self.descriptor = descriptor }

  func next() -> String? {
    var bytes: [UInt8] = []
    var byte: UInt8 = 0
    while read(descriptor, &byte, 1) == 1 {
      if byte == UInt8(ascii: "\n") { return String(decoding: bytes, as: UTF8.self) }
      bytes.append(byte)
    }
    return bytes.isEmpty ? nil : String(decoding: bytes, as: UTF8.self)
  }
}
