import { useChat } from "ai-sdk-react-v7";
import { mount } from "./usechat-app.js";

void mount(useChat as never, "@ai-sdk/react 4.0.177 (newest major)");
