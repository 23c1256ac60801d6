public import Foundation

/// An XML property list written by hand (not by the library, nor by Foundation): a dictionary of string values, in
/// the order given, each key exactly as given (two spellings of one key stay two).
public func handWrittenPlist(_ entries: [(key: String, value: String)]) -> Data {
  var text = """
    <?xml version="1.0" encoding="UTF-8"?>
    <!DOCTYPE plist PUBLIC "-//Apple//DTD PLIST 1.0//EN" "http://www.apple.com/DTDs/PropertyList-1.0.dtd">
    <plist version="1.0">
    <dict>

    """
  for (key, value) in entries { text += "\t<key>\(key)</key>\n\t<string>\(value)</string>\n" }
  text += "</dict>\n</plist>\n"
  return Data(text.utf8)
}

/// Whether the raw bytes of a property list hold `<key>KEY</key>` then `<string>VALUE</string>` at the top level,
/// byte for byte (read without any property-list parser).
public func rawPlist(_ bytes: Data, holds key: String, _ value: String) -> Bool {
  bytes.range(of: Data("<key>\(key)</key>\n\t<string>\(value)</string>".utf8)) != nil
}
