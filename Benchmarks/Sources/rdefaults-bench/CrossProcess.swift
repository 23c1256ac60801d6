import Dispatch
import Foundation
import ReactiveDefaults
import Synchronization

#if canImport(Glibc)
  import Glibc
#endif

/// From a child process's save of a new value to the observer callback here.
enum CrossProcess {
  static let key = DefaultsKey<Int>("value", default: 0)

  /// The child: writes each number read from stdin, saves, and answers with the time the save finished (`file`: the
  /// target is a file store's path).
  static func runChild(suite: String, file: Bool = false) -> Never {
    let store = file ? DefaultsStore(fileURL: URL(fileURLWithPath: suite))! : DefaultsStore(suiteName: suite)!
    while let line = readLine() {
      guard let value = Int(line) else { break }
      store[key] = value
      store.flush()
      FileHandle.standardOutput.write(Data("\(DispatchTime.now().uptimeNanoseconds)\n".utf8))
    }
    exit(0)
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
        let now = DispatchTime.now().uptimeNanoseconds
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
          let now = DispatchTime.now().uptimeNanoseconds
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
