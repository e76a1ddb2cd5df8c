import { useChat } from "ai-sdk-react-v6";
import { mount } from "./usechat-app.js";

void mount(useChat as never, "@ai-sdk/react 3.0.328 (newest 6.x)");
