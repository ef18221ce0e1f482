import java.util.ArrayList;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;

// Shared by casflow's JSON-lines JVM servers (pipeline/jvm.py compiles it beside each
// server): Debian's Java libraries ship no JSON parser we could rely on.
/** Just enough JSON: objects, arrays, strings, numbers, true/false/null. */
final class Json {
  private final String text;
  private int at;

  Json(String text) {
    this.text = text;
  }

  Object value() {
    skip();
    char c = text.charAt(at);
    if (c == '{') {
      Map<String, Object> map = new LinkedHashMap<>();
      at++;
      skip();
      if (text.charAt(at) == '}') {
        at++;
        return map;
      }
      while (true) {
        skip();
        String key = string();
        skip();
        expect(':');
        map.put(key, value());
        skip();
        if (text.charAt(at++) == '}') {
          return map;
        }
      }
    }
    if (c == '[') {
      List<Object> list = new ArrayList<>();
      at++;
      skip();
      if (text.charAt(at) == ']') {
        at++;
        return list;
      }
      while (true) {
        list.add(value());
        skip();
        if (text.charAt(at++) == ']') {
          return list;
        }
      }
    }
    if (c == '"') {
      return string();
    }
    if (text.startsWith("true", at)) {
      at += 4;
      return Boolean.TRUE;
    }
    if (text.startsWith("false", at)) {
      at += 5;
      return Boolean.FALSE;
    }
    if (text.startsWith("null", at)) {
      at += 4;
      return null;
    }
    int start = at;
    while (at < text.length() && "+-0123456789.eE".indexOf(text.charAt(at)) >= 0) {
      at++;
    }
    String number = text.substring(start, at);
    if (number.contains(".") || number.contains("e") || number.contains("E")) {
      return Double.parseDouble(number);
    }
    return Long.parseLong(number);
  }

  private void skip() {
    while (at < text.length() && Character.isWhitespace(text.charAt(at))) {
      at++;
    }
  }

  private void expect(char c) {
    if (text.charAt(at++) != c) {
      throw new IllegalArgumentException("JSON: expected " + c + " at " + (at - 1));
    }
  }

  private String string() {
    expect('"');
    StringBuilder out = new StringBuilder();
    while (true) {
      char c = text.charAt(at++);
      if (c == '"') {
        return out.toString();
      }
      if (c != '\\') {
        out.append(c);
        continue;
      }
      char e = text.charAt(at++);
      switch (e) {
        case 'n': out.append('\n'); break;
        case 't': out.append('\t'); break;
        case 'r': out.append('\r'); break;
        case 'b': out.append('\b'); break;
        case 'f': out.append('\f'); break;
        case 'u':
          out.append((char) Integer.parseInt(text.substring(at, at + 4), 16));
          at += 4;
          break;
        default: out.append(e);
      }
    }
  }

  static String write(Object value) {
    StringBuilder out = new StringBuilder();
    write(value, out);
    return out.toString();
  }

  private static void write(Object value, StringBuilder out) {
    if (value == null) {
      out.append("null");
    } else if (value instanceof String) {
      out.append('"');
      for (char c : ((String) value).toCharArray()) {
        if (c == '"' || c == '\\') {
          out.append('\\').append(c);
        } else if (c < 0x20) {
          out.append(String.format("\\u%04x", (int) c));
        } else {
          out.append(c);
        }
      }
      out.append('"');
    } else if (value instanceof Map) {
      out.append('{');
      boolean first = true;
      for (Map.Entry<?, ?> entry : ((Map<?, ?>) value).entrySet()) {
        if (!first) {
          out.append(',');
        }
        first = false;
        write(String.valueOf(entry.getKey()), out);
        out.append(':');
        write(entry.getValue(), out);
      }
      out.append('}');
    } else if (value instanceof List) {
      out.append('[');
      boolean first = true;
      for (Object item : (List<?>) value) {
        if (!first) {
          out.append(',');
        }
        first = false;
        write(item, out);
      }
      out.append(']');
    } else {
      out.append(value);
    }
  }
}
